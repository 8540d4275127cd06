// Guarded sampling draws about one allocation in STRATA_GUARDED_SAMPLE_RATE
// (200 here): through every allocating entry point of the C API, on every
// thread, each allocation counted once.
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "guarded/region.hpp"
#include "strata/strata.h"

namespace {

constexpr int rate = 200;

// Of `count` blocks from `allocate`, freed at once, how many were guarded.
int guarded_of(int count, const std::function<void*()>& allocate) {
  int guarded = 0;
  for (int i = 0; i < count; ++i) {
    void* p = allocate();
    EXPECT_NE(p, nullptr);
    if (strata::guarded::owns(p)) ++guarded;
    strata_free(p);
  }
  return guarded;
}

// `count` allocations at one in `rate` draw count / rate blocks on average. The
// gaps between draws are uniform (standard deviation 0.58 of the mean), so over
// a hundred draws the count is within 30% but once in millions of runs.
void expect_rate(int guarded, int count) {
  int expected = count / rate;
  EXPECT_GE(guarded, expected * 7 / 10);
  EXPECT_LE(guarded, expected * 13 / 10);
}

}  // namespace

TEST(guarded_sample_rate, every_entry_point_counts_its_allocations) {
  constexpr int count = 20'000;
  expect_rate(guarded_of(count, [] { return strata_malloc(64); }), count);
  expect_rate(guarded_of(count, [] { return strata_calloc(4, 16); }), count);
  expect_rate(guarded_of(count, [] { return strata_malloc_aligned(64, 64); }), count);
  expect_rate(guarded_of(count, [] { return strata_aligned_alloc(256, 100); }), count);
  expect_rate(guarded_of(count,
                         [] {
                           void* p = nullptr;
                           EXPECT_EQ(strata_posix_memalign(&p, 32, 48), 0);
                           return p;
                         }),
              count);
  strata_heap_t* heap = strata_heap_new();
  ASSERT_NE(heap, nullptr);
  expect_rate(guarded_of(count, [heap] { return strata_heap_malloc(heap, 32); }), count);
  expect_rate(guarded_of(count, [heap] { return strata_heap_malloc_aligned(heap, 32, 128); }),
              count);
  strata_heap_destroy(heap);
}

TEST(guarded_sample_rate, a_moving_realloc_counts_as_one_allocation) {
  constexpr int count = 20'000;
  int guarded_before = 0;
  int guarded_after = 0;
  for (int i = 0; i < count; ++i) {
    void* p = strata_malloc(16);
    if (strata::guarded::owns(p)) ++guarded_before;
    void* q = strata_realloc(p, 4096);  // moves: an allocation of its own
    ASSERT_NE(q, nullptr);
    if (strata::guarded::owns(q)) ++guarded_after;
    strata_free(q);
  }
  expect_rate(guarded_before, count);
  expect_rate(guarded_after, count);
}

TEST(guarded_sample_rate, every_thread_samples) {
  // Samplers started before the workers run: ctest runs this test alone, and a
  // worker's blocks may come while another thread is still starting them (one
  // drew 27 of 20,000 in a CI run).
  strata_free(strata_malloc(1));
  constexpr int threads = 4;
  constexpr int count = 20'000;
  std::vector<int> guarded(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back(
        [&guarded, t] { guarded[t] = guarded_of(count, [] { return strata_malloc(24); }); });
  for (std::thread& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t) expect_rate(guarded[t], count);
}
