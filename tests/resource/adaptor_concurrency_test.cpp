// Adaptors shared by threads: synchronized around single-threaded resources,
// atomic statistics, tracking and limiting over a thread-safe upstream.
#include <strata/limiting.hpp>
#include <strata/statistics.hpp>
#include <strata/synchronized.hpp>
#include <strata/tracking.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

constexpr int threads = 4;
constexpr int rounds = 20000;

// Allocate and free from `resource` on several threads at once, writing each block.
template <class Resource>
void hammer(Resource& resource) {
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&resource, t] {
      std::vector<std::pair<void*, std::size_t>> held;
      for (int i = 0; i < rounds; ++i) {
        const std::size_t bytes = 16 + static_cast<std::size_t>((i * 7 + t) % 500);
        auto* p = static_cast<unsigned char*>(resource.allocate(bytes));
        p[0] = static_cast<unsigned char>(i);
        held.emplace_back(p, bytes);
        if (held.size() > 16) {
          resource.deallocate(held.front().first, held.front().second);
          held.erase(held.begin());
        }
      }
      for (auto [p, bytes] : held) resource.deallocate(p, bytes);
    });
  for (auto& thread : team) thread.join();
}

TEST(SynchronizedConcurrency, PlainStatisticsStayExactUnderTheLock) {
  strata::synchronized<strata::statistics<strata::malloc_resource>> shared;
  hammer(shared);
  const auto s = shared.with_lock([](auto& stats) { return stats.snapshot(); });
  EXPECT_EQ(s.allocations, static_cast<std::uint64_t>(threads) * rounds);
  EXPECT_EQ(s.deallocations, s.allocations);
  EXPECT_EQ(s.bytes_in_use, 0u);
}

TEST(SynchronizedConcurrency, AtomicStatisticsNeedNoLock) {
  strata::statistics<strata::heap_resource, true> shared;
  hammer(shared);
  const auto s = shared.snapshot();
  EXPECT_EQ(s.allocations, static_cast<std::uint64_t>(threads) * rounds);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_LE(s.peak_blocks_in_use, static_cast<std::uint64_t>(threads) * 17);
}

TEST(SynchronizedConcurrency, TrackingAndLimitingShareAThreadSafeUpstream) {
  strata::limiting<strata::heap_resource> cap(1 << 20);
  strata::tracking<strata::upstream_ref<strata::limiting<strata::heap_resource>>, true> shared(
      strata::upstream_ref{cap});
  hammer(shared);
  EXPECT_EQ(shared.live_blocks(), 0u);
  EXPECT_EQ(cap.bytes_in_use(), 0u);
}

}  // namespace

namespace {

TEST(SynchronizedConcurrency, SampledTrackingCountsExactlyWithoutALock) {
  strata::tracking<strata::heap_resource, true> shared(
      strata::tracking_options{.sample_bytes = 4096, .seed = 7});
  hammer(shared);
  EXPECT_EQ(shared.live_blocks(), 0u);
  EXPECT_EQ(shared.live_bytes(), 0u);
  EXPECT_EQ(shared.total_allocations(), static_cast<std::uint64_t>(threads) * rounds);
  EXPECT_TRUE(shared.live().empty());
}

}  // namespace
