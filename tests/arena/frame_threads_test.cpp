// Frame allocator on several threads: private arenas, crosswise pool frees.
#include <strata/frame.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

namespace {

// While set on a thread, every operator new on that thread fails.
thread_local bool operator_new_fails = false;

}  // namespace

// operator new replaced for this program, so a test can make it fail on one thread.
void* operator new(std::size_t bytes) {
  if (operator_new_fails) throw std::bad_alloc();
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
// Not inlined: GCC would see the malloc'd block reach free through delete and warn.
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

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

// Another thread's free needs no memory: with operator new failing on that
// thread it neither throws nor loses the block, which its owner reuses after
// begin_frame(); so do blocks of every size class freed the same way.
TEST(FrameThreads, OtherThreadFreeSucceedsWhileAllocationFails) {
  strata::frame_allocator<> frames;
  std::vector<void*> blocks;
  for (std::size_t bytes : {16, 32, 64, 128, 256})
    for (int i = 0; i < 100; ++i) blocks.push_back(frames.pool_allocate(bytes));
  int threw = 0;
  std::thread([&] {  // a thread that never used `frames`: its free makes it no state
    operator_new_fails = true;
    for (void* p : blocks) {
      try {
        frames.pool_deallocate(p);
      } catch (const std::bad_alloc&) {
        ++threw;
      }
    }
    operator_new_fails = false;
  })
      .join();
  EXPECT_EQ(threw, 0);
  frames.begin_frame();
  std::vector<void*> again;
  for (std::size_t bytes : {16, 32, 64, 128, 256})
    for (int i = 0; i < 100; ++i) again.push_back(frames.pool_allocate(bytes));
  std::sort(blocks.begin(), blocks.end());
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, blocks);  // every block came back, each once
  frames.end_frame();
}

}  // namespace
