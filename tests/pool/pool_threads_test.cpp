// The thread-safe pool under several threads allocating and freeing crosswise.
#include <strata/pool.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace {

TEST(ConcurrentPool, ThreadsAllocateAndFreeEachOthersBlocks) {
  constexpr strata::pool_config checked{.checked = true};
  strata::concurrent_fixed_pool<strata::malloc_resource, checked> pool(64, 16, 16384);
  constexpr int threads = 4;
  constexpr int rounds = 20000;
  std::vector<std::vector<void*>> handoff(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) {
        auto* p = static_cast<unsigned char*>(pool.allocate());
        std::memset(p, t, 64);
        ASSERT_EQ(p[63], t);
        handoff[t].push_back(p);
      }
    });
  }
  for (auto& w : workers) w.join();
  workers.clear();
  for (int t = 0; t < threads; ++t) {
    // each thread frees the blocks another thread allocated
    workers.emplace_back([&, t] {
      for (void* p : handoff[(t + 1) % threads]) pool.deallocate(p);
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(pool.live_blocks(), 0u);
}

}  // namespace
