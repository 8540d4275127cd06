// The statistics, limiting, failure-callback and aligned adaptors' contracts.
#include <strata/aligned.hpp>
#include <strata/failure_callback.hpp>
#include <strata/limiting.hpp>
#include <strata/statistics.hpp>
#include <strata/synchronized.hpp>
#include <strata/tracking.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// An upstream that counts its calls, can be told to fail, and only ever
// aligns to 16 bytes whatever it is asked (as a device allocator might).
struct counting_upstream {
  int* allocations;
  int* deallocations;
  int* failures_left;
  // Serve from malloc at 16 bytes, or throw while failures are left.
  void* allocate(std::size_t bytes, std::size_t) {
    if (*failures_left > 0) {
      --*failures_left;
      throw std::bad_alloc();
    }
    ++*allocations;
    return std::malloc(bytes == 0 ? 1 : bytes);
  }
  // Give the block back to malloc.
  void deallocate(void* p, std::size_t, std::size_t) {
    ++*deallocations;
    std::free(p);
  }
  bool is_equal(const counting_upstream&) const noexcept { return true; }
};

struct counts {
  int allocations = 0, deallocations = 0, failures_left = 0;
  counting_upstream upstream() { return {&allocations, &deallocations, &failures_left}; }
};

static_assert(strata::host_resource<strata::statistics<strata::malloc_resource>>);
static_assert(strata::host_resource<strata::limiting<strata::malloc_resource>>);
static_assert(strata::host_resource<strata::aligned<strata::malloc_resource>>);
static_assert(strata::host_resource<strata::synchronized<strata::malloc_resource>>);
static_assert(strata::host_resource<strata::failure_callback<strata::malloc_resource>>);
static_assert(strata::host_resource<
              strata::statistics<strata::tracking<strata::limiting<strata::heap_resource>>>>);
static_assert(strata::releasing_resource<strata::statistics<strata::heap_resource>>);

TEST(Statistics, CountersAddUp) {
  strata::statistics<strata::malloc_resource> stats;
  void* a = stats.allocate(100);
  void* b = stats.allocate(1000, 64);
  void* c = stats.allocate(0);
  auto s = stats.snapshot();
  EXPECT_EQ(s.bytes_in_use, 1100u);
  EXPECT_EQ(s.blocks_in_use, 3u);
  EXPECT_EQ(s.allocations, 3u);
  stats.deallocate(b, 1000, 64);
  s = stats.snapshot();
  EXPECT_EQ(s.bytes_in_use, 100u);
  EXPECT_EQ(s.peak_bytes_in_use, 1100u);
  EXPECT_EQ(s.peak_blocks_in_use, 3u);
  EXPECT_EQ(s.bytes_allocated, 1100u);
  EXPECT_EQ(s.bytes_freed, 1000u);
  EXPECT_EQ(s.deallocations, 1u);
  stats.deallocate(a, 100);
  stats.deallocate(c, 0);
  EXPECT_EQ(stats.bytes_in_use(), 0u);
}

TEST(Statistics, HistogramHasPowerOfTwoBuckets) {
  EXPECT_EQ(strata::size_bucket(0), 0u);
  EXPECT_EQ(strata::size_bucket(1), 0u);
  EXPECT_EQ(strata::size_bucket(2), 1u);
  EXPECT_EQ(strata::size_bucket(3), 2u);
  EXPECT_EQ(strata::size_bucket(64), 6u);
  EXPECT_EQ(strata::size_bucket(65), 7u);
  EXPECT_EQ(strata::size_bucket(SIZE_MAX), 64u);
  strata::statistics<strata::malloc_resource> stats;
  for (std::size_t bytes : {33, 64, 64, 65, 4096}) stats.deallocate(stats.allocate(bytes), bytes);
  const auto s = stats.snapshot();
  EXPECT_EQ(s.histogram[6], 3u);
  EXPECT_EQ(s.histogram[7], 1u);
  EXPECT_EQ(s.histogram[12], 1u);
  std::uint64_t sum = 0;
  for (auto n : s.histogram) sum += n;
  EXPECT_EQ(sum, 5u);
}

TEST(Statistics, PeakResetsToWhatIsInUse) {
  strata::statistics<strata::malloc_resource> stats;
  void* a = stats.allocate(500);
  void* b = stats.allocate(300);
  stats.deallocate(a, 500);
  EXPECT_EQ(stats.peak_bytes_in_use(), 800u);
  stats.reset_peak();
  EXPECT_EQ(stats.peak_bytes_in_use(), 300u);
  EXPECT_EQ(stats.snapshot().peak_blocks_in_use, 1u);
  void* c = stats.allocate(100);
  EXPECT_EQ(stats.peak_bytes_in_use(), 400u);
  stats.deallocate(b, 300);
  stats.deallocate(c, 100);
}

TEST(Statistics, NestedScopesSeeTheirOwnIntervals) {
  strata::statistics<strata::malloc_resource, true> stats;
  void* before = stats.allocate(10);
  strata::statistics_scope outer(stats);
  void* a = stats.allocate(100);
  strata::statistics_delta inner_delta;
  {
    strata::statistics_scope inner(stats);
    void* b = stats.allocate(200);
    stats.deallocate(before, 10);
    stats.deallocate(b, 200);
    inner_delta = inner.delta();
  }
  EXPECT_EQ(inner_delta.bytes_allocated, 200u);
  EXPECT_EQ(inner_delta.bytes_freed, 210u);
  EXPECT_EQ(inner_delta.allocations, 1u);
  EXPECT_EQ(inner_delta.deallocations, 2u);
  EXPECT_EQ(inner_delta.net_bytes(), -10);
  const auto outer_delta = outer.delta();
  EXPECT_EQ(outer_delta.bytes_allocated, 300u);
  EXPECT_EQ(outer_delta.allocations, 2u);
  EXPECT_EQ(outer_delta.net_bytes(), 90);
  stats.deallocate(a, 100);
}

TEST(Statistics, FailedUpstreamCountsNothing) {
  counts n;
  n.failures_left = 1;
  strata::statistics<counting_upstream> stats(n.upstream());
  EXPECT_THROW(stats.allocate(64), std::bad_alloc);
  EXPECT_EQ(stats.snapshot().allocations, 0u);
}

TEST(Statistics, BadAlignmentThrowsInvalidArgument) {
  strata::statistics<strata::heap_resource> stats;
  EXPECT_THROW(stats.allocate(64, 3), std::invalid_argument);
  EXPECT_EQ(stats.snapshot().allocations, 0u);
}

TEST(Limiting, ThrowsBeforeTheUpstreamSeesTheCall) {
  counts n;
  strata::limiting<counting_upstream> limited(n.upstream(), 1000);
  void* a = limited.allocate(600);
  EXPECT_EQ(n.allocations, 1);
  try {
    limited.allocate(500);
    FAIL() << "no exception";
  } catch (const strata::limit_exceeded& e) {
    EXPECT_EQ(e.requested(), 500u);
    EXPECT_EQ(e.cap(), 1000u);
    const std::string what = e.what();
    EXPECT_NE(what.find("500"), std::string::npos) << what;
    EXPECT_NE(what.find("1000"), std::string::npos) << what;
  }
  EXPECT_EQ(n.allocations, 1);
  EXPECT_THROW(limited.allocate(SIZE_MAX), std::bad_alloc);
  limited.deallocate(a, 600);
  EXPECT_EQ(limited.bytes_in_use(), 0u);
  void* b = limited.allocate(1000);
  void* zero = limited.allocate(0);
  limited.deallocate(zero, 0);
  limited.deallocate(b, 1000);
  EXPECT_THROW(limited.allocate(8, 24), std::invalid_argument);
}

TEST(Limiting, UpstreamFailureGivesTheBytesBack) {
  counts n;
  n.failures_left = 1;
  strata::limiting<counting_upstream> limited(n.upstream(), 100);
  EXPECT_THROW(limited.allocate(100), std::bad_alloc);
  EXPECT_EQ(limited.bytes_in_use(), 0u);
  limited.deallocate(limited.allocate(100), 100);
}

TEST(FailureCallback, RetriesThenSucceeds) {
  counts n;
  n.failures_left = 2;
  std::vector<int> attempts;
  strata::failure_callback<counting_upstream> resource(
      n.upstream(),
      [&](std::size_t bytes, std::size_t, int attempt) {
        EXPECT_EQ(bytes, 64u);
        attempts.push_back(attempt);
        return true;
      },
      3);
  void* p = resource.allocate(64);
  EXPECT_EQ(attempts, (std::vector<int>{0, 1}));
  EXPECT_EQ(resource.retries(), 2u);
  resource.deallocate(p, 64);
}

TEST(FailureCallback, RethrowsAfterTheBound) {
  counts n;
  n.failures_left = 10;
  int calls = 0;
  strata::failure_callback<counting_upstream> resource(
      n.upstream(), [&](std::size_t, std::size_t, int) { return ++calls, true; }, 3);
  EXPECT_THROW(resource.allocate(64), std::bad_alloc);
  EXPECT_EQ(calls, 3);  // before each of the 3 retries; the 4th failure is rethrown
  EXPECT_EQ(n.failures_left, 6);
}

TEST(FailureCallback, CallbackCanDecline) {
  counts n;
  n.failures_left = 10;
  strata::failure_callback<counting_upstream> resource(
      n.upstream(), [](std::size_t, std::size_t, int) { return false; }, 5);
  EXPECT_THROW(resource.allocate(64), std::bad_alloc);
  EXPECT_EQ(n.failures_left, 9);
  EXPECT_EQ(resource.retries(), 0u);
}

TEST(Aligned, HonoursAlignmentsAboveTheUpstreams) {
  counts n;
  strata::aligned<counting_upstream, 16> resource(n.upstream());
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t alignment = 1; alignment <= (1u << 16); alignment *= 2) {
    for (std::size_t bytes : {0, 1, 100, 5000}) {
      void* p = resource.allocate(bytes, alignment);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u) << alignment;
      std::memset(p, 0xab, bytes);
      blocks.emplace_back(p, alignment);
      if (bytes == 5000) resource.deallocate(p, bytes, alignment), blocks.pop_back();
    }
  }
  EXPECT_GT(resource.over_aligned_blocks(), 0u);
  for (auto [p, alignment] : blocks) resource.deallocate(p, 0, alignment);
  EXPECT_EQ(resource.over_aligned_blocks(), 0u);
  EXPECT_EQ(n.allocations, n.deallocations);
  EXPECT_THROW(resource.allocate(8, 48), std::invalid_argument);
  EXPECT_THROW(resource.allocate(SIZE_MAX - 8, 4096), std::bad_alloc);
}

TEST(AlignedDeathTest, FreeOfAnUnknownBlockIsReported) {
  strata::aligned<strata::malloc_resource> resource;
  alignas(256) static char foreign[256];
  EXPECT_DEATH(resource.deallocate(foreign, 256, 256), "did not hand out");
}

TEST(Synchronized, ForwardsAndRunsUnderTheLock) {
  strata::synchronized<strata::statistics<strata::malloc_resource>> shared;
  void* p = shared.allocate(128);
  EXPECT_EQ(shared.with_lock([](auto& stats) { return stats.bytes_in_use(); }), 128u);
  shared.deallocate(p, 128);
}

}  // namespace
