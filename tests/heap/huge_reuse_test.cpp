// Huge blocks reuse the segments of freed ones, resized: grown in place or
// moved with their pages, their tails cut when far too large. In a program of
// their own, in this order, since the cache of freed segments is the process's.
#include <cstdlib>
#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "os/os.hpp"
#include "strata/strata.h"

namespace os = strata::os;
constexpr std::size_t MiB = std::size_t{1} << 20;

// Minor page faults of this process so far.
long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Whether the heap resizes cached huge segments (not in secure mode, whose
// guard page ends each mapping).
bool resizes_huge_segments() {
  const char* secure = std::getenv("STRATA_SECURE");
  return secure == nullptr || std::strcmp(secure, "0") == 0;
}

TEST(HugeReuse, ACachedHugeSegmentGrowsForALargerBlockKeepingItsPages) {
  if (!resizes_huge_segments()) GTEST_SKIP() << "secure mode reuses only close fits";
  auto* first = static_cast<char*>(strata_malloc(40 * MiB));
  std::memset(first, 1, 40 * MiB);
  strata_free(first);
  long before = minor_faults();
  auto* second = static_cast<char*>(strata_malloc(60 * MiB));
  std::memset(second, 2, 60 * MiB);
  long faults = minor_faults() - before;
  // Only the 20 MiB it grew by is new (in place or moved by the OS, the 40 MiB
  // written before stay resident).
  EXPECT_LT(faults, static_cast<long>((20 * MiB) / 4096 + 512)) << faults;
  EXPECT_GE(strata_usable_size(second), 60 * MiB);
  for (std::size_t at = 0; at < 60 * MiB; at += 4096) ASSERT_EQ(second[at], 2) << at;
  strata_free(second);
}

TEST(HugeReuse, AHugeSegmentFarLargerThanTheRequestGivesItsTailBack) {
  if (!resizes_huge_segments()) GTEST_SKIP() << "secure mode reuses only close fits";
  // Larger than the segment the test before leaves cached, so this one is the best fit.
  auto* big = static_cast<char*>(strata_malloc(400 * MiB));
  for (std::size_t at = 0; at < 400 * MiB; at += 4096) big[at] = 1;
  strata_free(big);
  std::size_t resident = os::current_rss();
  void* small = strata_malloc(110 * MiB);
  EXPECT_EQ(small, big) << "the cached segment serves the smaller block";
  EXPECT_LT(strata_usable_size(small), 111 * MiB);
  EXPECT_LT(os::current_rss() + 250 * MiB, resident) << "the 290 MiB tail left with its pages";
  strata_free(small);
}

TEST(HugeReuse, HugeBlocksOfChangingSizesReuseTheMemoryTheyTouched) {
  if (!resizes_huge_segments()) GTEST_SKIP() << "secure mode reuses only close fits";
  // One block at a time, 10-25 MiB, every page written: after the first few, a
  // block takes the segment the one before it left, grown or cut as it needs.
  std::mt19937_64 random(5);
  std::uniform_int_distribution<std::size_t> size(10 * MiB, 25 * MiB);
  auto cycle = [&] {
    std::size_t bytes = size(random);
    auto* p = static_cast<char*>(strata_malloc(bytes));
    for (std::size_t at = 0; at < bytes; at += 4096) p[at] = 1;
    strata_free(p);
    return bytes / 4096;
  };
  for (int i = 0; i < 20; ++i) cycle();
  long before = minor_faults();
  std::size_t pages = 0;
  for (int i = 0; i < 200; ++i) pages += cycle();
  long faults = minor_faults() - before;
  // Fresh memory each time would fault every page in, and close fits alone left
  // one in twenty (an earlier heap); growth and cut tails fault in a few.
  EXPECT_LT(static_cast<std::size_t>(faults), pages / 100)
      << faults << " faults over " << pages << " pages written";
}
