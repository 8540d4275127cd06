// Frame allocator on several threads: private arenas, crosswise pool frees.
#include <strata/frame.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace {

TEST(FrameThreads, EachThreadHasItsOwnArenaAndReport) {
  strata::frame_options options;
  options.arena.growth = {16384, 2, 1 << 20};
  strata::frame_allocator<> frames(options);
  strata::frame_tag work = frames.register_tag("work");
  constexpr int threads = 4;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int frame = 0; frame < 50; ++frame) {
        frames.begin_frame();
        std::vector<unsigned char*> blocks;
        for (int i = 0; i < 200; ++i) {
          auto* p = static_cast<unsigned char*>(frames.allocate(64 + t, 16, work));
          std::memset(p, t, 64 + t);
          blocks.push_back(p);
        }
        for (auto* p : blocks) ASSERT_EQ(p[63], t);
        frames.end_frame();
      }
    });
  }
  // Reports taken while the threads end frames see each thread's last frame whole.
  for (int i = 0; i < 200; ++i) {
    for (const strata::frame_thread_report& thread : frames.report().threads) {
      if (thread.frames == 0) continue;              // no frame ended yet
      ASSERT_EQ(thread.last_frame_bytes % 200, 0u);  // 200 blocks of 64 + t bytes
      ASSERT_GE(thread.last_frame_bytes / 200, 64u);
      ASSERT_LE(thread.last_frame_bytes / 200, 64u + threads - 1);
    }
  }
  for (auto& w : workers) w.join();
  strata::frame_report r = frames.report();
  ASSERT_EQ(r.threads.size(), static_cast<std::size_t>(threads));
  std::size_t total = 0;
  for (auto& thread : r.threads) {
    EXPECT_EQ(thread.frames, 50u);
    total += thread.last_frame_bytes;
  }
  EXPECT_EQ(total, 200u * (64 * 4 + 0 + 1 + 2 + 3));
  EXPECT_EQ(r.tags[work].last_frame_bytes, total);
}

TEST(FrameThreads, PoolBlocksFreedByOtherThreadsReturnToTheirOwner) {
  strata::frame_allocator<> frames;
  constexpr int threads = 3;
  constexpr int blocks_per_thread = 5000;
  std::vector<std::vector<void*>> made(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < blocks_per_thread; ++i) made[t].push_back(frames.pool_allocate(64));
    });
  for (auto& w : workers) w.join();
  workers.clear();
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (void* p : made[(t + 1) % threads]) frames.pool_deallocate(p);
    });
  for (auto& w : workers) w.join();
  // The original owners are gone; a later owner-side begin_frame takes blocks back
  // only for its own pools, so nothing here may crash or be reported twice.
  frames.begin_frame();
  std::vector<void*> mine(100);
  for (auto& p : mine) p = frames.pool_allocate(64);
  std::sort(mine.begin(), mine.end());
  EXPECT_EQ(std::unique(mine.begin(), mine.end()), mine.end());
  frames.end_frame();
}

}  // namespace
