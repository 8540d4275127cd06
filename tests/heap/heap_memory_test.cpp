// Memory given back: RSS after a peak, thread churn, the large-block cache.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "heap/heap.hpp"
#include "heap/segment.hpp"
#include "option_for_test.hpp"
#include "os/os.hpp"
#include "repeated_block.hpp"
#include "strata/strata.h"

namespace heap = strata::heap;
namespace os = strata::os;
using strata_test_heap::purge_delay_for_test;
constexpr std::size_t MiB = std::size_t{1} << 20;

namespace {
// Minor page faults of this process so far.
long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}
}  // namespace

TEST(HeapMemory, RssFallsAfterFreeingAOneGiBPeak) {
  purge_delay_for_test delay(100);
  for (std::size_t block : {std::size_t{64} << 10, MiB, std::size_t{16} << 20}) {
    std::size_t base = os::current_rss();
    std::vector<void*> blocks;
    for (std::size_t total = 0; total < 1024 * MiB; total += block) {
      void* p = strata_malloc(block);
      ASSERT_NE(p, nullptr);
      std::memset(p, 1, block);
      blocks.push_back(p);
    }
    std::size_t peak = os::current_rss() - base;
    EXPECT_GE(peak, 800 * MiB) << block;  // the last size's leftover (< 10%) may be reused
    for (void* p : blocks) strata_free(p);
    // No allocator call from here on: the purge thread gives the memory back
    // once the purge delay has passed, while the program idles.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::size_t now = 0;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      now = os::current_rss();
    } while (now > base + peak / 10 && std::chrono::steady_clock::now() < deadline);
    EXPECT_LT(now, base + peak / 10) << "block " << block << ": RSS " << (now - base) / MiB
                                     << " MiB after a " << peak / MiB << " MiB peak";
  }
}

// 4 KiB pages of [p, p + size) that are resident.
std::size_t resident_pages(const void* p, std::size_t size) {
  std::vector<unsigned char> in_core(size / 4096);
  EXPECT_EQ(mincore(const_cast<void*>(p), size, in_core.data()), 0);
  return static_cast<std::size_t>(
      std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

// `count` blocks of `size` bytes, each written through with `fill`.
std::vector<void*> written_blocks(std::size_t count, std::size_t size, int fill) {
  std::vector<void*> blocks(count);
  for (void*& p : blocks) {
    p = strata_malloc(size);
    std::memset(p, fill, size);
  }
  return blocks;
}

// Bytes the heap committed more while `phase` ran.
template <class Phase>
std::size_t committed_growth(Phase&& phase) {
  strata_stats_t before;
  strata_stats_get(&before);
  phase();
  strata_stats_t after;
  strata_stats_get(&after);
  return after.committed - before.committed;
}

// Whether blocks live on checked pages (secure or debug mode), which carry a
// size record and canaries: their layout is not the one these tests pin down.
bool checked_pages() {
  return strata_option_get(STRATA_OPTION_SECURE) != 0 ||
         strata_option_get(STRATA_OPTION_DEBUG) != 0;
}

// Fill 2 MiB stretches with 64 KiB blocks, then free all of them but one block
// in every fourth stretch; after a forced collection, return how many 4 KiB
// pages an emptied stretch keeps resident at most, and a partly live one at least.
struct stretch_residency {
  std::size_t emptied = 0;
  std::size_t partly_live = 0;
};
stretch_residency purge_half_emptied_stretches() {
  constexpr std::size_t block = 64 << 10;
  constexpr std::size_t stretch = 2 * MiB;
  stretch_residency most;
  std::thread([&] {  // a thread of its own, so its segments hold only these blocks
    std::vector<void*> blocks;
    for (std::size_t total = 0; total < 96 * MiB; total += block) {
      void* p = strata_malloc(block);
      std::memset(p, 1, block);
      blocks.push_back(p);
    }
    // Only stretches our blocks cover whole count: no header, no other data.
    std::map<std::uintptr_t, std::vector<void*>> by_stretch;
    for (void* p : blocks) by_stretch[reinterpret_cast<std::uintptr_t>(p) / stretch].push_back(p);
    std::vector<std::uintptr_t> emptied, partly_live;
    std::vector<void*> kept;
    // A live page may reach into the next stretch, so the emptied stretches
    // checked are two away from any with a live block.
    for (auto& [index, members] : by_stretch) {
      bool whole = members.size() == stretch / block;
      bool keep_one = whole && index % 4 == 1;
      if (keep_one) partly_live.push_back(index);
      if (whole && index % 4 == 3) emptied.push_back(index);
      for (std::size_t i = keep_one ? 1 : 0; i < members.size(); ++i) strata_free(members[i]);
      if (keep_one) kept.push_back(members[0]);
    }
    strata_collect(1);
    EXPECT_GE(emptied.size(), 6u);
    EXPECT_GE(partly_live.size(), 6u);
    for (std::uintptr_t index : emptied)
      most.emptied =
          std::max(most.emptied, resident_pages(reinterpret_cast<void*>(index * stretch), stretch));
    most.partly_live = stretch / 4096;
    for (std::uintptr_t index : partly_live)
      most.partly_live = std::min(
          most.partly_live, resident_pages(reinterpret_cast<void*>(index * stretch), stretch));
    for (void* p : kept) strata_free(p);
  })
      .join();
  return most;
}

TEST(HeapMemory, PurgeGivesBackFreeSlicesBesideLiveOnes) {
  if (os::huge_pages_always()) GTEST_SKIP() << "transparent huge pages are always on here";
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  stretch_residency r = purge_half_emptied_stretches();
  EXPECT_EQ(r.emptied, 0u);
  EXPECT_LE(r.partly_live, 512u / 4) << "the free 3/4 of a stretch with one live page stayed";
}

TEST(HeapMemory, PurgeKeepsHugePagesWholeWhileTheyHoldLiveBlocks) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  long before = strata_option_get(STRATA_OPTION_LARGE_OS_PAGES);
  strata_option_set(STRATA_OPTION_LARGE_OS_PAGES, 1);
  stretch_residency r = purge_half_emptied_stretches();
  strata_option_set(STRATA_OPTION_LARGE_OS_PAGES, before);
  EXPECT_EQ(r.emptied, 0u) << "a wholly free huge page must still go back";
  EXPECT_EQ(r.partly_live, 512u) << "a huge page with a live block must not be split";
}

TEST(HeapMemory, ShortLivedThreadsLeaveRssBounded) {
  strata_stats_t before;
  strata_stats_get(&before);
  std::size_t base = os::current_rss();
  std::vector<void*> survivors;  // one block per thread outlives it, freed at the end
  for (int i = 0; i < 10000; ++i) {
    std::thread([i, &survivors] {
      std::vector<void*> blocks;
      for (int j = 0; j < 40; ++j) blocks.push_back(strata_malloc(16 + (i * 7 + j * 131) % 20000));
      for (void* p : blocks) strata_free(p);
      survivors.push_back(strata_malloc(32));
    }).join();
  }
  strata_stats_t s;
  strata_stats_get(&s);
  EXPECT_LT(os::current_rss(), base + 64 * MiB);
  EXPECT_LE(s.segments, before.segments + 8);
  EXPECT_EQ(s.threads, before.threads);  // every exited thread was retired
  for (void* p : survivors) strata_free(p);
}

TEST(HeapMemory, RepeatedLargeBlocksDoNotCallTheOs) {
  purge_delay_for_test delay(100);
  for (std::size_t size : {4 * MiB, 16 * MiB, 64 * MiB})
    EXPECT_LE(strata_test_heap::os_calls_of_repeated_block(size, 1000), 4u) << size;
}

TEST(HeapMemory, HugeCacheMakesRoomForTheLatestBlock) {
  purge_delay_for_test delay(100);
  // Ten other huge sizes fill the cache first; the block freed last must still be kept.
  for (std::size_t i = 0; i < 10; ++i) strata_free(strata_malloc((20 + 3 * i) * MiB));
  strata_free(strata_malloc(100 * MiB));
  strata_stats_t before;
  strata_stats_get(&before);
  for (int i = 0; i < 100; ++i) {
    auto* p = static_cast<char*>(strata_malloc(100 * MiB));
    p[0] = 1;
    strata_free(p);
  }
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_LE(after.os_calls - before.os_calls, 4u);
}

TEST(HeapMemory, HugeBlocksOfARepeatedPhaseGetTheirOwnSegmentsBack) {
  // Sizes within a quarter of each other, so each could take another's segment.
  const std::size_t sizes[] = {61 * MiB + 12345, 57 * MiB + 12345, 59 * MiB + 12345};
  void* first[3];
  for (int i = 0; i < 3; ++i) first[i] = strata_malloc(sizes[i]);
  for (void* p : first) strata_free(p);
  for (int i = 0; i < 3; ++i) {
    void* again = strata_malloc(sizes[i]);
    EXPECT_EQ(again, first[i]) << "block " << i << ": a segment the program touched already";
    strata_free(again);
  }
}

TEST(HeapMemory, EmptyPagesServeBeforeTheHeapGrows) {
  // Blocks of four large classes, freed: their pages stay behind, empty. A
  // block of yet another class must reuse their memory, not fault in more.
  // (The process's first segment starts small, and a mapping placed in its
  // range caps it: the main thread takes it, so the thread's is whole. A small
  // heap gives a one-block page's memory back at once: the thread holds 9 MiB
  // of 32 KiB blocks, never written, to be past the threshold.)
  purge_delay_for_test delay(60'000);  // the emptied pages keep their memory
  strata_free(strata_malloc(16));
  std::size_t grown = 0;
  std::thread([&] {
    std::vector<void*> held;
    for (std::size_t total = 0; total < 9 * MiB; total += 32 << 10)
      held.push_back(strata_malloc(32 << 10));
    for (std::size_t size : {512 * 1024, 1024 * 1024, 2048 * 1024, 4096 * 1024}) {
      void* p = strata_malloc(size);
      std::memset(p, 1, size);
      strata_free(p);
    }
    void* big = nullptr;
    grown = committed_growth([&] { big = written_blocks(1, 7 * MiB, 2)[0]; });
    strata_free(big);
    for (void* p : held) strata_free(p);
  }).join();
  EXPECT_LT(grown, 4 * MiB);
}

TEST(HeapMemory, SmallPagesLeaveALargeClassItsEmptyPage) {
  // A 1 MiB block, written and freed, leaves its page empty; blocks of 64 new
  // small classes then each need a page. None may carve the large page: the
  // next 1 MiB block comes back in place with its memory still there (it took
  // 32 fresh pages when the first small page split the large one's run).
  // (A small heap gives a one-block page's memory back at once: this heap
  // holds 6 MiB of 1 MiB blocks and 3 MiB of 32 KiB ones, never written, to
  // be past the threshold, yet below what makes a page kind take the other's.)
  purge_delay_for_test delay(60'000);  // no purge midway
  std::thread([] {
    std::vector<void*> held;
    for (int i = 0; i < 6; ++i) held.push_back(strata_malloc(MiB));
    for (std::size_t total = 0; total < 3 * MiB; total += 32 << 10)
      held.push_back(strata_malloc(32 << 10));
    void* first = strata_malloc(MiB);
    std::memset(first, 1, MiB);
    strata_free(first);
    std::vector<void*> small;
    for (std::size_t size = 16; size <= 1024; size += 16) small.push_back(strata_malloc(size));
    strata_stats_t before;
    strata_stats_get(&before);
    void* again = strata_malloc(MiB);
    strata_stats_t after;
    strata_stats_get(&after);
    EXPECT_EQ(again, first);
    EXPECT_EQ(after.committed, before.committed) << "the 1 MiB block took fresh memory";
    strata_free(again);
    for (void* p : small) strata_free(p);
    for (void* p : held) strata_free(p);
  }).join();
}

TEST(HeapMemory, PhasesThatTakeTurnsKeepTheirEmptiedPages) {
  // Batches of three classes take turns, the first five times a round (as
  // xsigma/alignment does with 256 B blocks at 16 ... 1024 B alignment). Their
  // emptied pages (4 + 8 + 16 of 64 KiB) fit the thread's budget, so from the
  // second round on every page stays, but the two a class's first new page of
  // a round may take from another class's empty current page: no batch gives
  // the others' retained pages back, and the slots the first batch's repeats
  // leave in the budget push none of them out.
  purge_delay_for_test delay(60'000);  // no purge midway
  std::thread([] {
    const std::size_t sizes[] = {256, 256, 256, 256, 256, 512, 1024};
    strata_stats_t before;
    strata_stats_get(&before);
    for (int round = 0; round < 4; ++round) {
      for (std::size_t phase = 0; phase < std::size(sizes); ++phase) {
        std::vector<void*> blocks(1000);
        for (void*& p : blocks) p = strata_malloc(sizes[phase]);
        strata_stats_t now;
        strata_stats_get(&now);
        if (round >= 1) {
          EXPECT_GE(now.pages - before.pages, 4u + 8 + 16 - 2) << round << ", " << phase;
        }
        for (void* p : blocks) strata_free(p);
      }
    }
  }).join();
}

TEST(HeapMemory, SecondRoundReusesTheFirstRoundsMemory) {
  purge_delay_for_test delay(100);
  // 64 MiB of 1 MiB blocks, freed, then allocated again: the second round must
  // reuse the memory the first faulted in (some of it waits in the segment
  // cache by then), not fault in clean slices beside it.
  std::size_t grown = 0;
  std::thread([&] {
    std::vector<void*> blocks = written_blocks(64, MiB, 1);
    for (void* p : blocks) strata_free(p);
    grown = committed_growth([&] {
      for (void*& p : blocks) p = strata_malloc(MiB);
    });
    for (void* p : blocks) strata_free(p);
  }).join();
  EXPECT_LT(grown, 8 * MiB);
}

TEST(HeapMemory, ARepeatedPhaseOfLargeBlocksFindsThemWhereTheyWere) {
  purge_delay_for_test delay(1000);
  // unified/small's pattern: blocks of 4 KiB - 1 MiB allocated, written and
  // freed, round after round. Once the layout settles, each block above a
  // slice lands where the same request landed before, and a round faults in
  // next to nothing (it faulted in 4,000 pages a round when pages of one
  // block and of many shared segments).
  std::mt19937_64 random(1);
  std::uniform_int_distribution<std::size_t> size_of(4096, MiB);
  std::vector<std::size_t> sizes(128);
  for (std::size_t& size : sizes) size = size_of(random);
  std::vector<std::vector<char*>> rounds;
  std::vector<long> faults;
  std::thread([&] {
    for (int round = 0; round < 3; ++round) {
      std::vector<char*> blocks;
      for (std::size_t size : sizes) blocks.push_back(static_cast<char*>(strata_malloc(size)));
      long before = minor_faults();
      for (std::size_t i = 0; i < sizes.size(); ++i) std::memset(blocks[i], round, sizes[i]);
      faults.push_back(minor_faults() - before);
      for (char* p : blocks) strata_free(p);
      rounds.push_back(blocks);
    }
  }).join();
  std::size_t pages = 0;
  for (std::size_t size : sizes) pages += size / 4096;
  // (Secure mode scatters blocks on purpose: only the faults apply there.)
  bool scattered = strata_option_get(STRATA_OPTION_SECURE) != 0;
  for (std::size_t i = 0; i < sizes.size() && !scattered; ++i) {
    if (sizes[i] > 64 * 1024) {
      EXPECT_EQ(rounds[2][i], rounds[1][i]) << "block " << i << " of " << sizes[i] << " bytes";
    }
  }
  EXPECT_LT(faults[2], static_cast<long>(pages / 50)) << "of " << pages << " pages";
}

TEST(HeapMemory, AOneBlockPageGoesBackUnlessItsClassComesBack) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  purge_delay_for_test delay(1000);
  std::thread([] {
    auto pages = [] {
      strata_stats_t stats;
      strata_stats_get(&stats);
      return stats.pages;
    };
    // A table growing through the classes, each size freed once its successor
    // holds the data: every old page goes back at once.
    void* table = strata_malloc(100000);
    std::uint64_t with_one = pages();
    for (std::size_t size : {200000, 400000, 800000}) {
      void* grown = strata_malloc(size);
      strata_free(table);
      table = grown;
      EXPECT_EQ(pages(), with_one) << size;
    }
    strata_free(table);
    EXPECT_EQ(pages(), with_one - 1);
    // A class asked for again after it gave a page back keeps its next emptied
    // page: a malloc/free loop then stays on that page.
    strata_free(strata_malloc(300000));
    void* first = strata_malloc(300000);
    strata_free(first);
    EXPECT_EQ(pages(), with_one);
    for (int i = 0; i < 3; ++i) {
      void* again = strata_malloc(300000);
      EXPECT_EQ(again, first);
      strata_free(again);
    }
  }).join();
}

TEST(HeapMemory, APageGivenBackIsClaimedAgainWhereItsClassLay) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  purge_delay_for_test delay(60'000);  // the freed slices keep their memory
  std::thread([] {
    // A page of 8 blocks for each of three classes, written, freed and given
    // back as free slices, side by side. Asked for again in the other order,
    // each class finds its page where it was, not the best-fitting run.
    void* anchor = strata_malloc(100);  // the segment never empties
    const std::size_t sizes[] = {20000, 40000, 60000};
    std::set<void*> first[3];
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 8; ++j) {
        void* p = strata_malloc(sizes[i]);
        std::memset(p, i, sizes[i]);
        first[i].insert(p);
      }
    }
    for (auto& blocks : first)
      for (void* p : blocks) strata_free(p);
    strata_collect(0);  // the emptied pages go back; their memory stays
    std::set<void*> again[3];
    for (int i = 2; i >= 0; --i) {
      for (int j = 0; j < 8; ++j) again[i].insert(strata_malloc(sizes[i]));
      EXPECT_EQ(again[i], first[i]) << sizes[i];
    }
    for (auto& blocks : again)
      for (void* p : blocks) strata_free(p);
    strata_free(anchor);
  }).join();
}

TEST(HeapMemory, AThreadKeepsOnlyItsLowestEmptiedOneBlockPages) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  purge_delay_for_test delay(60'000);  // no purge midway
  std::thread([] {
    auto pages = [] {
      strata_stats_t stats;
      strata_stats_get(&stats);
      return stats.pages;
    };
    auto place = [](void* p) {
      heap::segment* seg = heap::segment_of(p);
      return std::pair{seg->serial, seg->page_of(p)->slice_index};
    };
    const std::uint64_t none = pages();
    // Eleven classes that each gave a page back and were asked for again: each
    // would keep its emptied page. Their blocks, all live at once, then freed.
    const std::size_t sizes[] = {100000, 150000, 200000,  300000,  400000, 500000,
                                 700000, 900000, 1200000, 1600000, 2200000};
    static_assert(std::size(sizes) > heap::kept_single_slots);
    for (std::size_t size : sizes) {
      strata_free(strata_malloc(size));
      strata_free(strata_malloc(size));
    }
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::pair<void*, std::size_t>> by_place;
    for (std::size_t size : sizes) {
      void* p = strata_malloc(size);
      by_place[place(p)] = {p, size};
    }
    for (auto& [where, block] : by_place) strata_free(block.first);
    // The lowest pages stay; the rest went back as free slices.
    EXPECT_EQ(pages(), none + heap::kept_single_slots);
    std::vector<std::pair<void*, std::size_t>> kept;
    for (auto& [where, block] : by_place) {
      if (kept.size() < heap::kept_single_slots) kept.push_back(block);
    }
    // A loop over those sizes stays on their pages.
    for (int i = 0; i < 3; ++i) {
      for (auto [p, size] : kept) {
        void* again = strata_malloc(size);
        EXPECT_EQ(again, p) << size;
        strata_free(again);
      }
    }
    EXPECT_EQ(pages(), none + heap::kept_single_slots);
  }).join();
}

// Whether the slices a one-block page holding `p` needs to hold `size` bytes
// lie free right after it, inside the segment's mapping (the address space
// past it may be taken), so that a realloc can grow the block in place.
bool room_after(void* p, std::size_t size) {
  heap::segment* seg = heap::segment_of(p);
  heap::page* pg = seg->page_of(p);
  std::size_t block = heap::class_block_size(heap::size_class_of(size));
  std::size_t end = pg->slice_index + (block + heap::slice_size - 1) / heap::slice_size;
  if (end * heap::slice_size > heap::segment_mapped_bytes(seg)) return false;
  for (std::size_t s = pg->slice_index + pg->slice_count; s < end; ++s)
    if (((seg->free_slices[s / 64] >> (s % 64)) & 1) == 0) return false;
  return true;
}

TEST(HeapMemory, ReallocGrowsALargeBlockIntoTheFreeSlicesAfterIt) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  std::thread([] {
    // A buffer grown by an eighth at each step, as Python grows a list, from
    // 100 KB to the largest class: wherever the slices after it are free it
    // stays where it is, and its contents survive every step.
    std::size_t size = 100000;
    auto* p = static_cast<unsigned char*>(strata_malloc(size));
    std::memset(p, 1, size);
    int in_place = 0;
    for (std::size_t next = size + size / 8; next <= heap::medium_max; next += next / 8) {
      bool room = room_after(p, next);
      auto* q = static_cast<unsigned char*>(strata_realloc(p, next));
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(q[0], 1);
      EXPECT_EQ(q[size - 1], 1) << "contents lost growing to " << next;
      if (room) {
        EXPECT_EQ(q, p) << "moved though the slices after it were free, growing to " << next;
        EXPECT_GE(strata_usable_size(q), next);
      }
      in_place += q == p;
      std::memset(q + size, 1, next - size);
      p = q;
      size = next;
    }
    EXPECT_GT(in_place, 0);
    strata_free(p);
  }).join();
}

TEST(HeapMemory, ABlockGrownOutOfAKeptPageLeavesItsClass) {
  if (checked_pages()) GTEST_SKIP() << "checked pages lay blocks out otherwise";
  std::thread([] {
    auto live = [](std::size_t size) {
      strata_stats_t stats;
      strata_stats_get(&stats);
      std::size_t cls = heap::size_class_of(size);
      return stats.class_mallocs[cls] - stats.class_frees[cls];
    };
    // A class asked for again keeps its emptied page; its block, taken from
    // that page, grows in place into a larger class.
    strata_free(strata_malloc(100000));
    void* kept = strata_malloc(100000);
    strata_free(kept);
    auto* p = static_cast<char*>(strata_malloc(100000));
    ASSERT_EQ(p, kept);
    std::uint64_t small_live = live(100000), large_live = live(300000);
    std::memset(p, 5, 100000);
    bool room = room_after(p, 300000);
    auto* q = static_cast<char*>(strata_realloc(p, 300000));
    if (!room) GTEST_SKIP() << "the slices after the kept page are taken here";
    ASSERT_EQ(q, p);
    // Counted as a block of the larger class now, no longer of the smaller one,
    // whose next block comes from elsewhere.
    EXPECT_EQ(live(100000), small_live - 1);
    EXPECT_EQ(live(300000), large_live + 1);
    auto* other = static_cast<char*>(strata_malloc(100000));
    EXPECT_TRUE(other + 100000 <= q || other >= q + 300000) << "overlaps the grown block";
    std::memset(other, 6, 100000);
    EXPECT_EQ(q[99999], 5);
    strata_free(other);
    strata_free(q);
    EXPECT_EQ(live(100000), small_live - 1);
    EXPECT_EQ(live(300000), large_live);
  }).join();
}

TEST(HeapMemory, SmallBlocksAfterLargeOnesReuseTheirMemory) {
  purge_delay_for_test delay(10000);
  // 128 MiB of 1 MiB blocks freed, then 128 MiB of 1,000-byte blocks: pages
  // of many blocks take over the memory the one-block pages' segments still
  // hold rather than fault in as much again; once they begin, segment after
  // segment, without faulting memory in again before each.
  std::size_t grown = 0;
  std::thread([&] {
    for (void* p : written_blocks(128, MiB, 1)) strata_free(p);
    std::vector<void*> small;
    grown = committed_growth([&] { small = written_blocks(128 * MiB / 1000, 1000, 2); });
    for (void* p : small) strata_free(p);
  }).join();
  EXPECT_LT(grown, 16 * MiB) << "of 128 MiB";
}

TEST(HeapMemory, KeptEmptyPagesLetTheOldestGoFirst) {
  purge_delay_for_test delay(100);
  // A phase of 4 KiB blocks fills the thread's budget of kept empty pages. The
  // next phase's emptied pages must be kept all the same (the older ones make
  // room), so its next batch finds them in place instead of carving new ones.
  std::thread([] {
    std::vector<void*> earlier(2000);
    for (void*& p : earlier) p = strata_malloc(4096);
    for (void* p : earlier) strata_free(p);
    std::vector<void*> later(1000);
    for (void*& p : later) p = strata_malloc(256);
    std::set<heap::page*> pages;
    for (void* p : later) pages.insert(heap::segment_of(p)->page_of(p));
    for (void* p : later) strata_free(p);
    ASSERT_GT(pages.size(), 2u);
    for (heap::page* pg : pages) EXPECT_NE(pg->owner.load(), 0u) << "a page given back";
  }).join();
}

TEST(HeapMemory, HugeReallocKeepsItsBytesWhicheverOsCallFails) {
  // Growing a huge block may extend it in place, move its mapping or copy it:
  // fail each OS call in turn, and the block must come back whole or stay as it was.
  const std::size_t size = 12 * MiB;
  for (std::uint64_t nth = 1; nth <= 6; ++nth) {
    auto* p = static_cast<unsigned char*>(strata_malloc(size));
    ASSERT_NE(p, nullptr);
    for (std::size_t i = 0; i < size; i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
    void* neighbour = strata_malloc(size);  // often in the way of growing in place
    os::inject_failure(nth);
    auto* q = static_cast<unsigned char*>(strata_realloc(p, 3 * size));
    os::inject_failure(0);
    unsigned char* kept = q != nullptr ? q : p;  // NULL leaves the old block alive
    for (std::size_t i = 0; i < size; i += 4096)
      ASSERT_EQ(kept[i], static_cast<unsigned char>(i >> 12)) << "call " << nth << ", byte " << i;
    if (q != nullptr) {
      ASSERT_GE(strata_usable_size(q), 3 * size);
      q[3 * size - 1] = 1;
    }
    strata_free(kept);
    strata_free(neighbour);
  }
}

TEST(HeapMemory, CollectPurgesFreedPages) {
  std::vector<void*> blocks;
  for (int i = 0; i < 4000; ++i) blocks.push_back(strata_malloc(8192));
  for (void* p : blocks) std::memset(p, 1, 8192);
  strata_stats_t full;
  strata_stats_get(&full);
  for (void* p : blocks) strata_free(p);
  strata_collect(1);
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_GE(after.purged, full.purged + 16 * MiB);
  EXPECT_LE(after.committed + 16 * MiB, full.committed);
}

TEST(HeapMemory, CallocOfALargeBlockLeavesFreshMemoryUntouched) {
  if (checked_pages()) GTEST_SKIP() << "checked pages write canaries into their blocks";
  if (strata_option_get(STRATA_OPTION_PURGE_DECOMMITS) == 0 || os::huge_pages_always())
    GTEST_SKIP() << "purged memory may keep its bytes, or a huge page backs the block whole";
  std::thread([] {
    strata_collect(1);  // what earlier tests freed is purged: it reads as zeros again
    // A thread's first allocations go by the sampling hook (the first sets its
    // heap up, the next looks at the samplers): a calloc there clears its block.
    for (int i = 0; i < 2; ++i) strata_free(strata_malloc(16));
    std::vector<unsigned char*> blocks;
    // One-block pages of fresh slices (above a slice, up to the largest class):
    // calloc needs to write none of their bytes, so none is faulted in.
    for (std::size_t size : {std::size_t{100000}, std::size_t{300000}, std::size_t{3} << 20}) {
      auto* p = static_cast<unsigned char*>(strata_calloc(1, size));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(resident_pages(p, size / 4096 * 4096), 0u) << size;
      for (std::size_t i = 0; i < size; i += 509) ASSERT_EQ(p[i], 0) << size;
      blocks.push_back(p);
    }
    // The same classes again, on the pages just freed with bytes written: cleared.
    for (unsigned char* p : blocks) {
      std::memset(p, 0xa5, 100000);
      strata_free(p);
    }
    for (std::size_t size : {std::size_t{100000}, std::size_t{300000}, std::size_t{3} << 20}) {
      auto* p = static_cast<unsigned char*>(strata_calloc(size / 1000, 1000));
      ASSERT_NE(p, nullptr);
      for (std::size_t i = 0; i < size; i += 127) ASSERT_EQ(p[i], 0) << size << " at " << i;
      strata_free(p);
    }
  }).join();
}
