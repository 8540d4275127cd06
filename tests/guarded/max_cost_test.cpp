// STRATA_GUARDED_MAX_COST: with every allocation drawn (rate 1) but guarded work
// allowed 0.1% of a thread's time, a thread that allocates fast gets a guarded
// block now and then, not every time, and its other blocks come from the heap.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "guarded/region.hpp"
#include "strata/strata.h"

namespace {

// Of `count` blocks allocated, written and freed in a tight loop, how many were guarded.
int guarded_of(int count) {
  int guarded = 0;
  for (int i = 0; i < count; ++i) {
    auto* p = static_cast<unsigned char*>(strata_malloc(64));
    EXPECT_NE(p, nullptr);
    std::memset(p, i & 0xff, 64);
    if (strata::guarded::owns(p)) ++guarded;
    strata_free(p);
  }
  return guarded;
}

}  // namespace

TEST(guarded_max_cost, a_fast_allocating_thread_is_sampled_within_its_budget) {
  ASSERT_EQ(strata_option_get(STRATA_OPTION_GUARDED_MAX_COST), 1);
  // A draw and its free make two mprotect calls (microseconds): at 0.1% the next
  // one waits a thousand times as long, while the loop's heap blocks take
  // nanoseconds, so few of 20,000 are guarded, and the first is.
  strata_free(strata_malloc(1));  // the samplers start with the first thread
  int guarded = guarded_of(20'000);
  EXPECT_GE(guarded, 1);
  EXPECT_LE(guarded, 2'000);
}

TEST(guarded_max_cost, each_thread_has_its_own_budget) {
  // Samplers started before the workers run: ctest runs this test alone, and a
  // worker's 5,000 blocks may all come while another thread is still starting them.
  strata_free(strata_malloc(1));
  constexpr int threads = 3;
  std::vector<int> guarded(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&guarded, t] { guarded[t] = guarded_of(5'000); });
  for (std::thread& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_GE(guarded[t], 1) << "thread " << t;  // a thread's first draw is always allowed
    EXPECT_LT(guarded[t], 5'000) << "thread " << t;
  }
}
