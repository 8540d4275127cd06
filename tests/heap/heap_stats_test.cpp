// Statistics add up: every malloc and free is counted in its class, whether it
// took the fast path, another thread freed it, or its thread has exited.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "heap/heap_internal.hpp"
#include "heap/segment.hpp"
#include "heap/size_class.hpp"
#include "strata/strata.h"

namespace {

// The class a request of `size` bytes is served and counted in: in debug mode
// each block also holds its size record (docs/safety.md), so it may be the next.
std::size_t class_of_request(std::size_t size) {
  bool debug = strata_option_get(STRATA_OPTION_DEBUG) != 0;
  return strata::heap::size_class_of(debug ? size + strata::heap::debug_record_bytes : size);
}

struct class_counts {
  std::uint64_t mallocs;
  std::uint64_t frees;
};

class_counts counts_of(std::size_t size) {
  strata_stats_t s;
  strata_stats_get(&s);
  std::size_t cls = class_of_request(size);
  return {s.class_mallocs[cls], s.class_frees[cls]};
}

}  // namespace

TEST(HeapStats, FastPathPairsAreCountedExactly) {
  // Classes no other test of this file uses: a list page (which counts its
  // frees) and a map page (which counts its mallocs).
  for (std::size_t size : {std::size_t{208}, std::size_t{24576}}) {
    strata_free(strata_malloc(size));  // the thread and the class's page exist
    strata_stats_t start;
    strata_stats_get(&start);
    class_counts before = counts_of(size);
    for (int i = 0; i < 100000; ++i) strata_free(strata_malloc(size));
    class_counts after = counts_of(size);
    EXPECT_EQ(after.mallocs - before.mallocs, 100000u) << size;
    EXPECT_EQ(after.frees - before.frees, 100000u) << size;
    strata_stats_t end;
    strata_stats_get(&end);
    EXPECT_EQ(end.in_use, start.in_use) << size;
  }
}

TEST(HeapStats, AnOwnerFreeCountThatWrapsLosesNothing) {
  constexpr std::size_t size = 3072;
  void* p = strata_malloc(size);
  while (!strata::heap::segment_map::contains(strata::heap::segment_of(p))) {
    strata_free(p);  // a block guarded sampling or the profiler placed: not on a page
    p = strata_malloc(size);
  }
  strata::heap::page* pg = strata::heap::segment_of(p)->page_of(p);
  strata_free(p);
  class_counts before = counts_of(size);  // folds the page: its free count starts at 0
  // As if 2^32 - 10 frees had come since: the next 100 carry the count out of its 32 bits.
  constexpr std::uint64_t preset = (std::uint64_t{1} << 32) - 10;
  pg->counts += preset << 32;
  for (int i = 0; i < 100; ++i) strata_free(strata_malloc(size));
  EXPECT_LT(pg->counts >> 32, 100u);  // it did wrap
  class_counts after = counts_of(size);
  EXPECT_EQ(after.frees - before.frees, preset + 100);
  EXPECT_EQ(after.mallocs - before.mallocs, preset + 100);
}

// Blocks the owner frees into its full map pages (20 KiB blocks, a few to a
// page) serve again before any new page, and the counts add up across the
// pages' trips off the full list and back.
TEST(HeapStats, BlocksFreedIntoFullMapPagesServeAgain) {
  constexpr std::size_t size = 20 << 10;
  class_counts before = counts_of(size);
  strata_stats_t start;
  strata_stats_get(&start);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(strata_malloc(size));
  std::set<void*> freed;
  for (std::size_t i = 0; i < blocks.size(); i += 8) {  // one of each full page, several times
    freed.insert(blocks[i]);
    strata_free(blocks[i]);
  }
  std::vector<void*> again;
  for (std::size_t i = 0; i < freed.size() + 8; ++i) again.push_back(strata_malloc(size));
  // Checked pages hold freed blocks back a while; sampling hands some out from its own region.
  bool reuse_exact = strata_option_get(STRATA_OPTION_SECURE) == 0 &&
                     strata_option_get(STRATA_OPTION_DEBUG) == 0 &&
                     strata_option_get(STRATA_OPTION_GUARDED_SAMPLE_RATE) == 0;
  if (reuse_exact) {
    for (void* p : freed) EXPECT_NE(std::find(again.begin(), again.end(), p), again.end()) << p;
  }
  class_counts middle = counts_of(size);
  EXPECT_EQ(middle.mallocs - before.mallocs, 64u + again.size());
  EXPECT_EQ(middle.frees - before.frees, freed.size());
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (i % 8 != 0) strata_free(blocks[i]);
  for (void* p : again) strata_free(p);
  class_counts after = counts_of(size);
  EXPECT_EQ(after.frees - before.frees, after.mallocs - before.mallocs);
  strata_stats_t end;
  strata_stats_get(&end);
  EXPECT_EQ(end.in_use, start.in_use);
}

// A block freed into a full map page just after the page malloc takes from ran
// out of blocks is the next one handed out, and that page's blocks keep counting.
TEST(HeapStats, ABlockFreedIntoAFullPageServesNextOnceTheCurrentPageIsSpent) {
  if (strata_option_get(STRATA_OPTION_SECURE) != 0 || strata_option_get(STRATA_OPTION_DEBUG) != 0 ||
      strata_option_get(STRATA_OPTION_GUARDED_SAMPLE_RATE) != 0)
    GTEST_SKIP() << "checked pages and sampling hand blocks out in an order of their own";
  constexpr std::size_t size = 24 << 10;
  class_counts before = counts_of(size);
  auto spent = [](void* p) {
    const strata::heap::page* pg = strata::heap::segment_of(p)->page_of(p);
    return pg->free == nullptr && pg->free_map == 0;
  };
  std::vector<void*> blocks;
  // Two pages' worth at least, ending with the current page's last block.
  do blocks.push_back(strata_malloc(size));
  while (blocks.size() < 24 || !spent(blocks.back()));
  void* first = blocks.front();  // on a page that went full earlier
  ASSERT_NE(strata::heap::segment_of(first)->page_of(first),
            strata::heap::segment_of(blocks.back())->page_of(blocks.back()));
  strata_free(first);
  void* next = strata_malloc(size);
  EXPECT_EQ(next, first);
  blocks.front() = next;
  for (void* p : blocks) strata_free(p);
  class_counts after = counts_of(size);
  EXPECT_EQ(after.mallocs - before.mallocs, blocks.size() + 1);
  EXPECT_EQ(after.frees - before.frees, blocks.size() + 1);
}

TEST(HeapStats, LiveBlocksShowInUseUntilFreed) {
  constexpr std::size_t size = 1792;
  strata_stats_t start;
  strata_stats_get(&start);
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(strata_malloc(size));
  strata_stats_t live;
  strata_stats_get(&live);
  EXPECT_EQ(live.in_use - start.in_use,
            5000u * strata::heap::class_block_size(class_of_request(size)));
  EXPECT_GE(live.peak_in_use, live.in_use);
  for (void* p : blocks) strata_free(p);
  strata_stats_t end;
  strata_stats_get(&end);
  EXPECT_EQ(end.in_use, start.in_use);
  EXPECT_EQ(end.class_mallocs[class_of_request(size)] - start.class_mallocs[class_of_request(size)],
            5000u);
}

TEST(HeapStats, FreesFromAnotherThreadAreCountedOnce) {
  constexpr std::size_t size = 336;
  class_counts before = counts_of(size);
  strata_stats_t start;
  strata_stats_get(&start);
  std::vector<void*> blocks;
  for (int i = 0; i < 3000; ++i) blocks.push_back(strata_malloc(size));
  std::thread([&] {
    for (void* p : blocks) strata_free(p);
  }).join();
  strata_collect(0);  // take the blocks back: the owner's counts must not see them again
  for (int i = 0; i < 3000; ++i) strata_free(strata_malloc(size));
  class_counts after = counts_of(size);
  strata_stats_t end;
  strata_stats_get(&end);
  EXPECT_EQ(after.mallocs - before.mallocs, 6000u);
  EXPECT_EQ(after.frees - before.frees, 6000u);
  EXPECT_GE(end.cross_thread_frees - start.cross_thread_frees, 3000u);
  EXPECT_EQ(end.in_use, start.in_use);
}

TEST(HeapStats, CountsOfExitedThreadsAreKept) {
  constexpr std::size_t size = 2560;
  class_counts before = counts_of(size);
  std::vector<void*> survivors;
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) strata_free(strata_malloc(size));
    for (int i = 0; i < 10; ++i) survivors.push_back(strata_malloc(size));
  }).join();
  class_counts exited = counts_of(size);
  EXPECT_EQ(exited.mallocs - before.mallocs, 1010u);
  EXPECT_EQ(exited.frees - before.frees, 1000u);
  for (void* p : survivors) strata_free(p);  // blocks of an exited thread: remote frees
  class_counts after = counts_of(size);
  EXPECT_EQ(after.frees - before.frees, 1010u);
}
