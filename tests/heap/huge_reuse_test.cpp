// Huge blocks reuse the segments of freed ones, resized: grown in place or
// moved with their pages, their tails cut when far too large. In a program of
// their own, in this order, since the cache of freed segments is the process's.
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "option_for_test.hpp"
#include "os/os.hpp"
#include "strata/strata.h"

namespace os = strata::os;
using strata_test_heap::purge_delay_for_test;
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
  purge_delay_for_test delay(60'000);  // freed segments wait in the cache with their memory
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
  purge_delay_for_test delay(60'000);  // freed segments wait in the cache with their memory
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
  purge_delay_for_test delay(60'000);  // freed segments wait in the cache with their memory
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

// The heap's statistics now.
strata_stats_t heap_stats() {
  strata_stats_t stats{};
  strata_stats_get(&stats);
  return stats;
}

// Every 4 KiB page of `bytes` at `p` written with `fill`, then checked.
void write_and_check(char* p, std::size_t bytes, char fill) {
  for (std::size_t at = 0; at < bytes; at += 4096) p[at] = fill;
  p[bytes - 1] = fill;
  for (std::size_t at = 0; at < bytes; at += 4096) ASSERT_EQ(p[at], fill) << at;
  ASSERT_EQ(p[bytes - 1], fill);
}

TEST(HugeReuse, BigBlocksOfEverySizeShareTheMappingTheLargestLeft) {
  if (!resizes_huge_segments()) GTEST_SKIP() << "secure mode reuses only close fits";
  // Nothing purged while the test runs, and nothing cached still holding memory
  // from the tests before: only this test's mappings can be reused.
  purge_delay_for_test never(-1);
  strata_stats_t start = heap_stats();

  // A block of a size class (5-8 MiB) takes the mapping a larger freed block left.
  auto* large = static_cast<char*>(strata_malloc(20 * MiB));
  write_and_check(large, 20 * MiB, 1);
  strata_free(large);
  auto* six = static_cast<char*>(strata_malloc(6 * MiB));
  EXPECT_EQ(six, large) << "the 6 MiB block reuses the 20 MiB block's memory";
  write_and_check(six, 6 * MiB, 2);
  strata_free(six);

  // Blocks of 5-25 MiB one at a time, as a program that processes frames or
  // files of varying size does: after the first round every block, above the
  // largest class or not, fits the mapping the largest left, so no round after
  // maps or commits memory anew, and the pages it writes are the ones written before.
  const std::size_t sizes[] = {25 * MiB,
                               6 * MiB,
                               8 * MiB + 200 * 1024,
                               21 * MiB,
                               5 * MiB + 300 * 1024,
                               14 * MiB,
                               7 * MiB + 512 * 1024,
                               25 * MiB,
                               11 * MiB,
                               6 * MiB + 100 * 1024};
  strata_stats_t before_round = heap_stats();
  auto round = [&](char fill) {
    for (std::size_t bytes : sizes) {
      auto* p = static_cast<char*>(strata_malloc(bytes));
      ASSERT_NE(p, nullptr);
      EXPECT_GE(strata_usable_size(p), bytes);
      write_and_check(p, bytes, fill);
      strata_free(p);
    }
  };
  round(3);
  strata_stats_t first = heap_stats();
  EXPECT_EQ(first.in_use, before_round.in_use) << "every block freed";
  long faults_before = minor_faults();
  std::size_t pages = 0;
  for (std::size_t bytes : sizes) pages += bytes / 4096;
  for (char fill = 4; fill < 7; ++fill) {
    round(fill);
    strata_stats_t now = heap_stats();
    EXPECT_LE(now.reserved, first.reserved) << "no mapping added after the first round";
    EXPECT_LE(now.committed, first.committed) << "no memory committed after the first round";
    EXPECT_EQ(now.segments, first.segments);
    EXPECT_EQ(now.in_use, first.in_use);
    EXPECT_EQ(now.mallocs - first.mallocs, now.frees - first.frees);
  }
  long faults = minor_faults() - faults_before;
  EXPECT_LT(static_cast<std::size_t>(faults), 3 * pages / 100)
      << faults << " faults over " << 3 * pages << " pages written";
  // One mapping, the largest block's, holds all this memory: not one per kind of block.
  EXPECT_LT(first.committed - start.committed, 26 * MiB);
}

// Sixteen blocks of 1-10 MiB, all live at once, freed and asked for again in
// the same order, as a phase that rebuilds its buffers does: the second round
// maps nothing and finds nearly all its memory where the first left it. (A
// 5-8 MiB block whose class had had a page of its own took a cached huge
// mapping, so the larger blocks after it mapped and faulted in 19 MiB anew:
// 4,840 faults. Left: the 1-4 MiB pages land best-fit among the freed slices,
// not each where it was, and fault ~4% of their pages in again.)
TEST(HugeReuse, APhaseOfBigBlocksAllLiveReusesItsMemoryInTheNextRound) {
  purge_delay_for_test never(-1);
  std::mt19937_64 random(2);
  std::uniform_int_distribution<std::size_t> size(MiB, 10 * MiB);
  std::vector<std::size_t> sizes(16);
  for (auto& bytes : sizes) bytes = size(random);
  std::vector<char*> blocks(sizes.size());
  auto round = [&](char fill) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      blocks[i] = static_cast<char*>(strata_malloc(sizes[i]));
      ASSERT_NE(blocks[i], nullptr);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      write_and_check(blocks[i], sizes[i], static_cast<char>(fill + i));
    for (char* p : blocks) strata_free(p);
  };
  round(10);
  strata_stats_t first = heap_stats();
  long faults_before = minor_faults();
  round(40);
  long faults = minor_faults() - faults_before;
  strata_stats_t second = heap_stats();
  std::size_t pages = 0;
  for (std::size_t bytes : sizes) pages += bytes / 4096;
  EXPECT_LE(second.reserved, first.reserved) << "no mapping added in the second round";
  EXPECT_LE(second.committed, first.committed + 4 * MiB);
  EXPECT_LT(static_cast<std::size_t>(faults), 8 * pages / 100)
      << faults << " faults over " << pages << " pages written";
}
