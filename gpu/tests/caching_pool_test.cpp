// The caching allocator's pools: rounding, splitting and its limit,
// statistics that add up, empty_cache, garbage collection, and running out.
#include "caching_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace strata::gpu::testing {
namespace {

using caching_pool = caching_test;

// The size of the block the allocator handed out at `p`.
std::size_t block_size(const caching_allocator& cache, void* p) {
  for (const segment_info& segment : cache.snapshot().segments)
    for (const block_info& b : segment.blocks)
      if (b.address == reinterpret_cast<std::uintptr_t>(p)) return b.size;
  return 0;
}

TEST_F(caching_pool, RoundsTo512Bytes) {
  EXPECT_EQ(block_size(*cache, cache->allocate(1, streams[0])), 512u);
  EXPECT_EQ(block_size(*cache, cache->allocate(513, streams[0])), 1024u);
  EXPECT_EQ(block_size(*cache, cache->allocate(70000, streams[0])), 70144u);
  expect_consistent();
}

TEST_F(caching_pool, RoundsToPowerOfTwoDivisions) {
  caching_config config;
  config.roundup_power2_divisions = 4;
  make(config);
  EXPECT_EQ(block_size(*cache, cache->allocate(5000, streams[0])), 5120u);
  EXPECT_EQ(block_size(*cache, cache->allocate(70000, streams[0])), 81920u);
  EXPECT_EQ(block_size(*cache, cache->allocate(65536, streams[0])), 65536u);
  // Below 2 KiB a quarter step is finer than 512 bytes: 512-byte steps rule.
  EXPECT_EQ(block_size(*cache, cache->allocate(1200, streams[0])), 1536u);
  expect_consistent();
}

TEST_F(caching_pool, SmallRequestsShareTwoMiBSegments) {
  for (int i = 0; i < 4; ++i) cache->allocate(256 * kib, streams[0]);
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.small.segment.current, 1);
  EXPECT_EQ(stats.small.reserved_bytes.current, static_cast<std::int64_t>(2 * mib));
  EXPECT_EQ(stats.large.segment.current, 0);
  expect_consistent();
}

TEST_F(caching_pool, LargeRequestsSplitTheirSegment) {
  // Below 10 MiB a request takes a 20 MiB segment and leaves the rest cached.
  void* p = cache->allocate(6 * mib, streams[0]);
  const memory_snapshot shot = cache->snapshot();
  ASSERT_EQ(shot.segments.size(), 1u);
  EXPECT_EQ(shot.segments[0].size, 20 * mib);
  ASSERT_EQ(shot.segments[0].blocks.size(), 2u);
  EXPECT_EQ(shot.segments[0].blocks[1].size, 14 * mib);
  // The rest serves the next request, and freeing both merges them back.
  void* q = cache->allocate(6 * mib, streams[0]);
  EXPECT_EQ(cache->stats().large.segment.current, 1);
  expect_consistent();
  cache->deallocate(p, 6 * mib, streams[0]);
  cache->deallocate(q, 6 * mib, streams[0]);
  EXPECT_EQ(cache->snapshot().segments[0].blocks.size(), 1u);
  expect_consistent();
  // From 10 MiB a request that no cached block fits takes a segment of its
  // own, rounded to 2 MiB.
  cache->allocate(21 * mib, streams[0]);
  EXPECT_EQ(cache->stats().large.reserved_bytes.current, static_cast<std::int64_t>(42 * mib));
}

TEST_F(caching_pool, MaxSplitSizeIsHonoured) {
  caching_config config;
  config.max_split_size = 8 * mib;
  make(config);
  // At or above the limit a block is not split...
  void* big = cache->allocate(12 * mib, streams[0]);
  memory_snapshot shot = cache->snapshot();
  ASSERT_EQ(shot.segments.size(), 1u);
  EXPECT_EQ(shot.segments[0].blocks.size(), 1u);
  cache->deallocate(big, 12 * mib, streams[0]);
  // ...nor used for a request below it, even from another stream...
  void* small = cache->allocate(2 * mib, streams[1]);
  EXPECT_EQ(cache->stats().num_device_allocs, 2u);
  EXPECT_NE(small, big);
  // ...but it serves a request of similar size.
  EXPECT_EQ(cache->allocate(10 * mib, streams[0]), big);
  EXPECT_EQ(cache->stats().num_device_allocs, 2u);
  expect_consistent();

  // A much larger oversize block is not used for a request it would waste.
  void* huge = cache->allocate(60 * mib, streams[1]);
  cache->deallocate(huge, 60 * mib, streams[1]);
  void* middle = cache->allocate(30 * mib, streams[1]);
  EXPECT_NE(middle, huge);
  EXPECT_EQ(cache->allocate(50 * mib, streams[1]), huge);
  expect_consistent();
}

TEST_F(caching_pool, StatisticsAddUpAndPeaksReset) {
  std::vector<void*> blocks;
  for (std::size_t i = 1; i <= 20; ++i)
    blocks.push_back(cache->allocate(i * 100 * kib, streams[i % 4]));
  expect_consistent();
  for (std::size_t i = 0; i < blocks.size(); i += 2)
    cache->deallocate(blocks[i], (i + 1) * 100 * kib, streams[i % 4]);
  expect_consistent();

  caching_stats stats = cache->stats();
  EXPECT_EQ(stats.all.allocation.current, 10);
  EXPECT_EQ(stats.all.allocation.peak, 20);
  EXPECT_EQ(stats.all.allocation.allocated, 20);
  EXPECT_EQ(stats.all.allocation.freed, 10);
  EXPECT_GE(stats.all.allocated_bytes.peak, stats.all.allocated_bytes.current);
  EXPECT_LE(stats.all.allocated_bytes.current, stats.all.reserved_bytes.current);
  EXPECT_LE(stats.all.requested_bytes.current, stats.all.allocated_bytes.current);
  EXPECT_EQ(stats.cache_hits + stats.cache_misses, 20u);

  cache->reset_peak_stats();
  stats = cache->stats();
  EXPECT_EQ(stats.all.allocation.peak, 10);
  EXPECT_EQ(stats.all.allocated_bytes.peak, stats.all.allocated_bytes.current);
  EXPECT_EQ(stats.small.active_bytes.peak, stats.small.active_bytes.current);

  cache->reset_accumulated_stats();
  stats = cache->stats();
  EXPECT_EQ(stats.all.allocation.allocated, 0);
  EXPECT_EQ(stats.cache_hits, 0u);
  EXPECT_EQ(stats.all.allocation.current, 10);
}

TEST_F(caching_pool, EmptyCacheReturnsEverySegment) {
  const std::size_t full = sim->memory().free;
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t i = 0; i < 40; ++i) {
    const std::size_t bytes = (i % 3 == 0) ? (i + 1) * mib / 2 : (i + 1) * 10 * kib;
    blocks.emplace_back(cache->allocate(bytes, streams[i % 4]), bytes);
  }
  // One block is also used on another stream and still pending at empty_cache.
  cache->record_stream(blocks[5].first, streams[2]);
  for (std::size_t i = 0; i < blocks.size(); ++i)
    cache->deallocate(blocks[i].first, blocks[i].second, streams[(i + 1) % 4]);
  EXPECT_LT(sim->memory().free, full);
  cache->empty_cache();
  EXPECT_EQ(sim->memory().free, full);
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.all.segment.current, 0);
  EXPECT_EQ(stats.all.reserved_bytes.current, 0);
  EXPECT_EQ(stats.num_device_allocs, stats.num_device_frees);
  EXPECT_TRUE(cache->snapshot().segments.empty());
}

TEST_F(caching_pool, EmptyCacheKeepsSegmentsInUse) {
  void* p = cache->allocate(4 * kib, streams[0]);
  void* q = cache->allocate(12 * mib, streams[0]);
  cache->deallocate(q, 12 * mib, streams[0]);
  cache->empty_cache();
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.all.segment.current, 1);
  EXPECT_EQ(stats.small.segment.current, 1);
  cache->deallocate(p, 4 * kib, streams[0]);
  expect_consistent();
}

TEST_F(caching_pool, OutOfMemoryEmptiesTheCacheAndRetries) {
  capacity = 64 * mib;
  make();
  std::vector<void*> held;
  for (int i = 0; i < 3; ++i) held.push_back(cache->allocate(12 * mib, streams[0]));
  for (void* p : held) cache->deallocate(p, 12 * mib, streams[0]);
  EXPECT_EQ(cache->stats().all.reserved_bytes.current, static_cast<std::int64_t>(36 * mib));
  // 40 MiB fits none of the cached segments and the device has 28 MiB left:
  // the cache goes back, and the second try succeeds.
  void* big = cache->allocate(40 * mib, streams[1]);
  ASSERT_NE(big, nullptr);
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.num_alloc_retries, 1u);
  EXPECT_EQ(stats.num_ooms, 0u);
  EXPECT_EQ(stats.num_device_frees, 3u);
  EXPECT_EQ(stats.all.reserved_bytes.current, static_cast<std::int64_t>(40 * mib));
  expect_consistent();
}

TEST_F(caching_pool, OutOfMemoryReportsTheNumbers) {
  capacity = 64 * mib;
  make();
  // A 20 MiB segment holding [6 MiB free, 3 MiB allocated, 11 MiB free] and
  // two 16 MiB segments in use: 52 MiB reserved, 35 MiB allocated, 12 MiB
  // left on the device.
  void* x = cache->allocate(6 * mib, streams[0]);
  cache->allocate(3 * mib, streams[0]);
  cache->allocate(16 * mib, streams[0]);
  cache->allocate(16 * mib, streams[0]);
  cache->deallocate(x, 6 * mib, streams[0]);
  try {
    cache->allocate(18 * mib, streams[0]);
    FAIL() << "expected out of memory";
  } catch (const out_of_memory_error& error) {
    const out_of_memory_report& report = error.report();
    EXPECT_TRUE(error.is_out_of_memory());
    EXPECT_EQ(report.requested, 18 * mib);
    EXPECT_EQ(report.allocated, 35 * mib);
    EXPECT_EQ(report.reserved, 52 * mib);
    EXPECT_EQ(report.largest_free, 11 * mib);
    EXPECT_NEAR(report.fragmentation, 6.0 / 17.0, 1e-9);
    EXPECT_EQ(report.device_total, 64 * mib);
    EXPECT_EQ(report.device_free, 12 * mib);
    const std::string message = error.what();
    EXPECT_NE(message.find("tried to allocate 18.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("35.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("52.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("largest free block is 11.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("fragmentation is 35.3%"), std::string::npos) << message;
    EXPECT_NE(error.snapshot_json().find("\"segments\":["), std::string::npos);
  }
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.num_ooms, 1u);
  EXPECT_EQ(stats.num_alloc_retries, 1u);
  EXPECT_EQ(cache->trace().back().action, trace_action::oom);
  EXPECT_EQ(cache->snapshot().segments.size(), 3u);
  expect_consistent();
}

TEST_F(caching_pool, DeviceFailureIsAStdException) {
  sim->set_out_of_memory(true);
  EXPECT_THROW(cache->allocate(mib, streams[0]), device_error);
  sim->set_out_of_memory(false);
  EXPECT_NE(cache->allocate(mib, streams[0]), nullptr);
  expect_consistent();
}

TEST_F(caching_pool, GarbageCollectionGivesBackIdleSegments) {
  capacity = 64 * mib;
  caching_config config;
  config.garbage_collection_threshold = 0.5;
  make(config);
  void* p = cache->allocate(12 * mib, streams[0]);
  cache->deallocate(p, 12 * mib, streams[0]);
  // 20 MiB cached + 26 MiB new would pass 32 MiB: the idle segment goes first.
  cache->allocate(25 * mib, streams[0]);
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.num_device_frees, 1u);
  EXPECT_EQ(stats.num_alloc_retries, 0u);
  EXPECT_EQ(stats.all.reserved_bytes.current, static_cast<std::int64_t>(26 * mib));
  expect_consistent();
}

}  // namespace
}  // namespace strata::gpu::testing
