// Memory given back across threads: segments of exited threads, large and huge
// blocks freed by a thread that does not own them, and a forced collection
// (what malloc_trim(0) calls) taking back everything free in the process.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "os/os.hpp"
#include "strata/strata.h"

namespace os = strata::os;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
// RSS a scenario may leave over its starting point once its memory is back.
constexpr std::size_t slack = 16 * MiB;

// Allocate `count` blocks of `size` bytes, each written through.
std::vector<void*> allocate_touched(std::size_t count, std::size_t size) {
  std::vector<void*> blocks;
  blocks.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    void* p = strata_malloc(size);
    EXPECT_NE(p, nullptr);
    if (p == nullptr) break;
    std::memset(p, static_cast<int>(i), size);
    blocks.push_back(p);
  }
  return blocks;
}

// Eight threads each allocate 16,384 blocks of 1 KiB and exit; their blocks, 128 MiB
// in all, come back to the caller (the thread's segments are abandoned by then).
std::vector<void*> blocks_of_exited_threads() {
  constexpr int threads = 8;
  std::vector<std::vector<void*>> per_thread(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&per_thread, t] { per_thread[t] = allocate_touched(16384, 1024); });
  for (std::thread& w : workers) w.join();
  std::vector<void*> all;
  for (auto& blocks : per_thread) all.insert(all.end(), blocks.begin(), blocks.end());
  return all;
}

// Wait (sleeping, no allocator call) until RSS falls below `limit`; the RSS then.
// The generous timeout only matters on failure: a passing run returns after one delay.
std::size_t rss_once_below(std::size_t limit) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::size_t now = os::current_rss();
  while (now >= limit && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = os::current_rss();
  }
  return now;
}

// Start each test with this thread's own deferred work done and caches purged,
// under the default purge delay (memory waits 100 ms) whatever the environment says.
class MemoryReturn : public ::testing::Test {
 protected:
  void SetUp() override {
    delay_ = strata_option_get(STRATA_OPTION_PURGE_DELAY_MS);
    strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 100);
    strata_collect(1);
    base_ = os::current_rss();
  }
  void TearDown() override { strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, delay_); }
  // Whether the purge thread may run: it is off by option, or never started
  // where the process began with a purge delay of 0 or less.
  bool purge_thread_available() const {
    return strata_option_get(STRATA_OPTION_PURGE_THREAD) != 0 && delay_ > 0;
  }
  std::size_t base_ = 0;
  long delay_ = 0;
};

}  // namespace

TEST_F(MemoryReturn, ForcedCollectionTakesBackSegmentsOfExitedThreads) {
  std::vector<void*> blocks = blocks_of_exited_threads();
  ASSERT_GT(os::current_rss(), base_ + 100 * MiB);
  for (void* p : blocks) strata_free(p);
  strata_collect(1);
  std::size_t after = os::current_rss();
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}

TEST_F(MemoryReturn, PurgeThreadTakesBackSegmentsOfExitedThreads) {
  if (!purge_thread_available()) GTEST_SKIP() << "no purge thread";
  std::vector<void*> blocks = blocks_of_exited_threads();
  ASSERT_GT(os::current_rss(), base_ + 100 * MiB);
  for (void* p : blocks) strata_free(p);
  // This thread idles: only the purge thread can give the memory back.
  std::size_t after = rss_once_below(base_ + slack);
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}

TEST_F(MemoryReturn, HugeBlockFreedByAnotherThreadLeavesAtOnce) {
  constexpr std::size_t size = 256 * MiB;
  void* p = strata_malloc(size);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, size);
  ASSERT_GT(os::current_rss(), base_ + 200 * MiB);
  std::thread([p] { strata_free(p); }).join();
  // The owner (this thread) has not entered the allocator since.
  std::size_t after = os::current_rss();
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}

TEST_F(MemoryReturn, LargeBlocksFreedByAnotherThreadLeaveAtOnce) {
  std::vector<void*> blocks = allocate_touched(60, 4 * MiB);
  ASSERT_GT(os::current_rss(), base_ + 200 * MiB);
  std::thread([&blocks] {
    for (void* p : blocks) strata_free(p);
  }).join();
  std::size_t after = os::current_rss();
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}

TEST_F(MemoryReturn, BlocksReallocMovesOutOfLeaveAtOnce) {
  // A buffer grown by doubling from 256 KiB to 8 MiB, written through at each
  // step, as sqlite and git grow theirs: each step it leaves (7.75 MiB in all)
  // goes back as the block moves, not after the purge delay.
  std::size_t size = 256 * 1024;
  auto* p = static_cast<unsigned char*>(strata_malloc(size));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, size);
  for (unsigned char step = 2; size < 8 * MiB; ++step) {
    p = static_cast<unsigned char*>(strata_realloc(p, size * 2));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p[0], step - 1);
    EXPECT_EQ(p[size - 1], step - 1) << "contents lost in the move";
    size *= 2;
    std::memset(p, step, size);
  }
  std::size_t after = os::current_rss();
  EXPECT_LT(after, base_ + 11 * MiB) << "RSS " << (after - base_) / MiB << " MiB over the start";
  strata_free(p);
}

TEST_F(MemoryReturn, BlocksOfAnExitedThreadStayValidWhileItsSegmentsArePurged) {
  // Keep one block live in every page so the segments stay abandoned, free the
  // rest: the purge thread must give back only free memory.
  std::vector<void*> blocks = blocks_of_exited_threads();
  std::vector<void*> kept;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i % 64 == 0)
      kept.push_back(blocks[i]);
    else
      strata_free(blocks[i]);
  }
  strata_collect(1);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    auto* bytes = static_cast<unsigned char*>(kept[i]);
    auto tag = static_cast<unsigned char>((i * 64) % 16384);
    ASSERT_EQ(bytes[0], tag);
    ASSERT_EQ(bytes[1023], tag);
  }
  for (void* p : kept) strata_free(p);
  strata_collect(1);
  std::size_t after = os::current_rss();
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}

TEST_F(MemoryReturn, ForcedCollectionPurgesAnIdleThreadsFreeSlices) {
  // Another thread frees 63 of every 64 blocks of 64 MiB, keeping its segments
  // (one live block in each 4 MiB), and then idles: its free slices wait for it
  // to enter the allocator again, unless a forced collection purges them.
  std::mutex lock;
  std::condition_variable changed;
  bool freed = false;
  bool finish = false;
  std::thread idler([&] {
    std::vector<void*> blocks = allocate_touched(1024, 64 * 1024);
    std::vector<void*> kept;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (i % 64 == 0)
        kept.push_back(blocks[i]);
      else
        strata_free(blocks[i]);
    }
    std::unique_lock<std::mutex> guard(lock);
    freed = true;
    changed.notify_all();
    changed.wait(guard, [&] { return finish; });
    for (void* p : kept) strata_free(p);
  });
  {
    std::unique_lock<std::mutex> guard(lock);
    changed.wait(guard, [&] { return freed; });
  }
  ASSERT_GT(os::current_rss(), base_ + 48 * MiB);
  strata_collect(1);
  std::size_t after = os::current_rss();
  {
    std::lock_guard<std::mutex> guard(lock);
    finish = true;
  }
  changed.notify_all();
  idler.join();
  EXPECT_LT(after, base_ + slack) << "RSS " << (after - base_) / MiB << " MiB over the start";
}
