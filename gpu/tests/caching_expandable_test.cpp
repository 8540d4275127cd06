// Expandable segments: one growing reservation per stream and pool, mapped and
// unmapped in the device's granules (caching_config::expandable_segments).
#include "caching_fixture.hpp"

#include <strata/gpu/caching_allocator.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <random>
#include <vector>

namespace strata::gpu::testing {
namespace {

caching_config expandable() {
  caching_config config;
  config.expandable_segments = true;
  return config;
}

// What a run of the growing-lengths sequence reached.
struct sequence_result {
  bool out_of_memory = false;
  out_of_memory_report report{};
  std::size_t peak_reserved = 0;
  std::size_t peak_allocated = 0;
};

// Growing sequence lengths (PyTorch's motivating case for expandable
// segments): at each step the length grows by one; the step keeps a tensor
// of length x `kept` (a cache entry, kept to the end) and works in a
// temporary of length x `work` bytes that it frees. Each kept tensor is
// larger than the last, so a plain cache carves it from an old workspace
// segment and strands that segment's rest.
sequence_result run_growing_lengths(caching_allocator& cache, stream s) {
  constexpr std::size_t kept = 1 * mib;
  constexpr std::size_t work = 3 * mib;
  sequence_result result;
  std::vector<void*> cached;
  try {
    for (std::size_t length = 10; length <= 30; ++length) {
      cached.push_back(cache.allocate_on(length * kept, device_alignment, s));
      cache.deallocate(cache.allocate_on(length * work, device_alignment, s));
    }
  } catch (const out_of_memory_error& e) {
    result.out_of_memory = true;
    result.report = e.report();
  }
  for (void* p : cached) cache.deallocate(p);
  const caching_stats stats = cache.stats();
  result.peak_reserved = static_cast<std::size_t>(stats.all.reserved_bytes.peak);
  result.peak_allocated = static_cast<std::size_t>(stats.all.allocated_bytes.peak);
  return result;
}

class caching_expandable : public caching_test {
 protected:
  // The pattern `seed` names in the first and last 16 KiB of a block: where a
  // neighbour that overlapped or a granule unmapped under it would show.
  static constexpr std::size_t edge = 16 * kib;
  static void mark(char* p, std::size_t bytes, unsigned seed) {
    if (bytes <= 2 * edge) return fill(p, bytes, seed);
    fill(p, edge, seed);
    fill(p + bytes - edge, edge, seed + 1);
  }
  static bool marked(const char* p, std::size_t bytes, unsigned seed) {
    if (bytes <= 2 * edge) return holds(p, bytes, seed);
    return holds(p, edge, seed) && holds(p + bytes - edge, edge, seed + 1);
  }
};

TEST_F(caching_expandable, GrowingLengthsRunOutWithoutAndCompleteWith) {
  backing = memory_backing::address_only;
  capacity = 576 * mib;
  make();
  const sequence_result plain = run_growing_lengths(*cache, streams[0]);
  ASSERT_TRUE(plain.out_of_memory);
  const double stranded =
      static_cast<double>(plain.report.reserved - plain.report.allocated) / double(capacity);
  EXPECT_GT(stranded, 0.25) << "reserved " << plain.report.reserved << ", allocated "
                            << plain.report.allocated;

  make(expandable());
  const sequence_result grown = run_growing_lengths(*cache, streams[0]);
  EXPECT_FALSE(grown.out_of_memory);
  EXPECT_LT(grown.peak_reserved, plain.peak_reserved);
  EXPECT_LE(static_cast<double>(grown.peak_reserved), 1.05 * double(grown.peak_allocated))
      << "peak reserved " << grown.peak_reserved << ", peak allocated " << grown.peak_allocated;
  expect_consistent();
}

TEST_F(caching_expandable, AStreamGrowsOneSegmentInPlace) {
  make(expandable());
  void* first = cache->allocate_on(12 * mib, device_alignment, streams[0]);
  cache->deallocate(first);
  void* larger = cache->allocate_on(14 * mib, device_alignment, streams[0]);
  EXPECT_EQ(larger, first);  // the free tail grew rather than a new segment
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.all.segment.current, 1);
  EXPECT_EQ(stats.all.reserved_bytes.current, static_cast<std::int64_t>(14 * mib));
  EXPECT_EQ(stats.num_device_allocs, 2u);
  cache->deallocate(larger);
  expect_consistent();
}

TEST_F(caching_expandable, StreamsAndPoolsGrowSegmentsOfTheirOwn) {
  make(expandable());
  void* small0 = cache->allocate_on(4 * kib, device_alignment, streams[0]);
  void* large0 = cache->allocate_on(3 * mib, device_alignment, streams[0]);
  void* large1 = cache->allocate_on(3 * mib, device_alignment, streams[1]);
  EXPECT_EQ(cache->stats().all.segment.current, 3);
  const memory_snapshot shot = cache->snapshot();
  for (const segment_info& segment : shot.segments) EXPECT_EQ(segment.size % (2 * mib), 0u);
  expect_consistent();
  for (void* p : {small0, large0, large1}) cache->deallocate(p);
}

TEST_F(caching_expandable, EmptyCacheUnmapsTheFreeTailAndKeepsLiveBlocks) {
  make(expandable());
  void* kept = cache->allocate_on(3 * mib, device_alignment, streams[0]);
  void* tail = cache->allocate_on(40 * mib, device_alignment, streams[0]);
  fill(kept, 3 * mib, 7);
  const std::size_t device_free = sim->memory().free;
  cache->deallocate(tail);
  cache->empty_cache();
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.all.reserved_bytes.current, static_cast<std::int64_t>(4 * mib));
  EXPECT_EQ(sim->memory().free, device_free + 40 * mib);
  EXPECT_TRUE(holds(kept, 3 * mib, 7));
  expect_consistent();
  cache->deallocate(kept);
  cache->empty_cache();
  EXPECT_EQ(cache->stats().all.reserved_bytes.current, 0);
  EXPECT_EQ(cache->stats().all.segment.current, 0);
  EXPECT_EQ(sim->memory().free, capacity);
}

// Random sizes and lifetimes on two streams, against a shadow of what each
// block holds: contents survive, blocks never overlap, and queued writes over
// every live block never touch unmapped memory (the simulator reports that).
TEST_F(caching_expandable, RandomLifetimesKeepContentsAndStayMapped) {
  simulated_config device_config;
  device_config.capacity = capacity;
  device_config.on_violation = violation_policy::record;
  destroy();
  sim = std::make_unique<simulated_device>(device_config);
  for (int i = 0; i < 2; ++i) streams.push_back(sim->create_stream());
  cache = std::make_unique<caching_allocator>(*sim, expandable());
  std::mt19937 random(37);
  std::map<char*, std::pair<std::size_t, unsigned>> shadow;
  for (int step = 0; step < 300; ++step) {
    if (!shadow.empty() && random() % 2 == 0) {
      auto it = std::next(shadow.begin(), static_cast<long>(random() % shadow.size()));
      ASSERT_TRUE(marked(it->first, it->second.first, it->second.second));
      cache->deallocate(it->first);
      shadow.erase(it);
      if (random() % 16 == 0) cache->empty_cache();
      continue;
    }
    const std::size_t bytes =
        random() % 2 == 0 ? 1 + random() % (256 * kib) : 1 * mib + random() % (5 * mib);
    const stream on = streams[random() % 2];
    auto* p = static_cast<char*>(cache->allocate_on(bytes, device_alignment, on));
    const auto after = shadow.lower_bound(p);
    if (after != shadow.end()) {
      ASSERT_LE(p + bytes, after->first);
    }
    if (after != shadow.begin()) {
      const auto before = std::prev(after);
      ASSERT_LE(before->first + before->second.first, p);
    }
    sim->memset_async(p, 0, bytes, on);
    sim->synchronize(on);
    mark(p, bytes, static_cast<unsigned>(step));
    shadow.emplace(p, std::make_pair(bytes, static_cast<unsigned>(step)));
  }
  expect_consistent();
  for (const auto& [p, content] : shadow) {
    EXPECT_TRUE(marked(p, content.first, content.second));
    cache->deallocate(p);
  }
  cache->empty_cache();
  EXPECT_EQ(cache->stats().all.reserved_bytes.current, 0);
  EXPECT_TRUE(sim->system().violations().empty());
}

TEST_F(caching_expandable, RunningOutGivesTheCacheBackAndRetries) {
  capacity = 64 * mib;
  make(expandable());
  void* a = cache->allocate_on(30 * mib, device_alignment, streams[0]);
  void* b = cache->allocate_on(20 * mib, device_alignment, streams[1]);
  cache->deallocate(b);
  // Stream 0 needs more than is left unmapped: stream 1's free tail is unmapped first.
  void* c = cache->allocate_on(30 * mib, device_alignment, streams[0]);
  EXPECT_EQ(cache->stats().num_alloc_retries, 1u);
  EXPECT_THROW(cache->allocate_on(30 * mib, device_alignment, streams[0]), out_of_memory_error);
  cache->deallocate(a);
  cache->deallocate(c);
  expect_consistent();
}

}  // namespace
}  // namespace strata::gpu::testing
