// largest_allocatable and would_fit: what an allocation would get, asked
// without allocating, on the strict simulated device.
#include "caching_fixture.hpp"

#include <gtest/gtest.h>

namespace strata::gpu::testing {
namespace {

using caching_answers = caching_test;

TEST_F(caching_answers, AskingAllocatesNothing) {
  capacity = 64 * mib;
  make();
  const caching_stats before = cache->stats();
  EXPECT_TRUE(cache->would_fit(30 * mib, streams[0]));
  EXPECT_EQ(cache->largest_allocatable(streams[0]), 64 * mib);
  const caching_stats after = cache->stats();
  EXPECT_EQ(after.num_device_allocs, before.num_device_allocs);
  EXPECT_EQ(after.all.reserved_bytes.current, 0);
  EXPECT_EQ(sim->memory().free, 64 * mib);
}

TEST_F(caching_answers, LargestAllocatableIsServedAndOneStepMoreIsNot) {
  capacity = 64 * mib;
  make();
  void* held = cache->allocate(30 * mib, streams[0]);  // its own 30 MiB segment
  const std::size_t largest = cache->largest_allocatable(streams[1]);
  EXPECT_EQ(largest, 34 * mib);
  EXPECT_TRUE(cache->would_fit(largest, streams[1]));
  EXPECT_FALSE(cache->would_fit(largest + 1, streams[1]));
  EXPECT_THROW(cache->allocate(largest + 1, streams[1]), out_of_memory_error);
  void* p = cache->allocate(largest, streams[1]);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(cache->largest_allocatable(streams[1]), 0u);
  EXPECT_FALSE(cache->would_fit(512, streams[1]));
  cache->deallocate(p, largest, streams[1]);
  cache->deallocate(held, 30 * mib, streams[0]);
  expect_consistent();
}

TEST_F(caching_answers, CachedAndSplittableBlocksCountOnEveryStream) {
  capacity = 40 * mib;
  make();
  void* a = cache->allocate(30 * mib, streams[0]);
  void* b = cache->allocate(10 * mib, streams[0]);  // the device is full now
  EXPECT_EQ(sim->memory().free, 0u);
  cache->deallocate(a, 30 * mib, streams[0]);
  // The cached 30 MiB block: on its stream, and borrowed by another.
  EXPECT_TRUE(cache->would_fit(30 * mib, streams[0]));
  EXPECT_TRUE(cache->would_fit(5 * mib, streams[1]));  // split from it
  EXPECT_FALSE(cache->would_fit(31 * mib, streams[1]));
  // A retry would give the idle 30 MiB segment back: room for a 30 MiB segment, not more.
  EXPECT_EQ(cache->largest_allocatable(streams[1]), 30 * mib);
  const caching_stats before = cache->stats();
  void* c = cache->allocate(5 * mib, streams[1]);
  EXPECT_EQ(cache->stats().num_device_allocs, before.num_device_allocs);
  cache->deallocate(c, 5 * mib, streams[1]);
  cache->deallocate(b, 10 * mib, streams[0]);
  expect_consistent();
}

TEST_F(caching_answers, SmallRequestsNeedASmallSegment) {
  capacity = 2 * mib;
  make();
  EXPECT_EQ(cache->largest_allocatable(streams[0]), mib);
  EXPECT_TRUE(cache->would_fit(mib, streams[0]));
  EXPECT_FALSE(cache->would_fit(mib + 1, streams[0]));
  void* p = cache->allocate(mib, streams[0]);
  cache->deallocate(p, mib, streams[0]);
  EXPECT_TRUE(cache->would_fit(0, streams[0]));
  EXPECT_FALSE(cache->would_fit(static_cast<std::size_t>(-1), streams[0]));
}

TEST_F(caching_answers, RoundingDivisionsAreHonoured) {
  capacity = 40 * mib;
  caching_config config;
  config.roundup_power2_divisions = 2;  // 10 MiB rounds to 12 MiB
  make(config);
  void* p = cache->allocate(20 * mib, streams[0]);
  const std::size_t largest = cache->largest_allocatable(streams[0]);
  EXPECT_TRUE(cache->would_fit(largest, streams[0]));
  void* q = cache->allocate(largest, streams[0]);
  EXPECT_NE(q, nullptr);
  cache->deallocate(q, largest, streams[0]);
  cache->deallocate(p, 20 * mib, streams[0]);
}

}  // namespace
}  // namespace strata::gpu::testing
