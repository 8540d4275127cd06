// Misuse the heap must catch in its default mode: every double free and every
// free of a pointer it did not hand out (interior, stray, into metadata or an
// unused slice), on the owning thread or another, for small, medium and huge
// blocks. Each prints one "strata: heap corruption: ..." line and aborts.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "heap/segment.hpp"
#include "strata/strata.h"

namespace {

constexpr const char* double_free = "strata: heap corruption: double free";
constexpr const char* not_handed_out = "strata: heap corruption: free of a pointer strata did not";

char* at(void* p, std::ptrdiff_t offset) {
  return static_cast<char*>(p) + offset;
}

// Free `p` from a thread of its own (a cross-thread free).
void free_elsewhere(void* p) {
  std::thread([p] { strata_free(p); }).join();
}

// A block freed twice in a row by its own thread.
void double_free_at_once(std::size_t size) {
  void* a = strata_malloc(size);
  strata_free(a);
  strata_free(a);
}

// A block freed twice by a thread of its own, beside a live block of its page.
void double_free_by_another_thread(std::size_t size) {
  void* keep = strata_malloc(size);
  void* a = strata_malloc(size);
  std::thread([a] {
    strata_free(a);
    strata_free(a);
  }).join();
  strata_free(keep);
}

class HeapMisuse : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(HeapMisuse, SmallDoubleFreeOnAPageWithLiveBlocks) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(32);
        void* a = strata_malloc(32);
        void* b = strata_malloc(32);
        strata_free(a);
        strata_free(b);
        strata_free(a);
        strata_free(keep);
      },
      double_free);
}

TEST_F(HeapMisuse, SmallDoubleFreeAtOnce) {
  EXPECT_DEATH(double_free_at_once(48), double_free);
}

TEST_F(HeapMisuse, SmallDoubleFreeByAnotherThread) {
  EXPECT_DEATH(double_free_by_another_thread(64), double_free);
}

TEST_F(HeapMisuse, SmallFreedByOwnerThenByAnotherThread) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(64);
        void* a = strata_malloc(64);
        strata_free(a);
        free_elsewhere(a);
        strata_free(keep);
      },
      double_free);
}

TEST_F(HeapMisuse, SmallFreedByAnotherThreadThenByOwner) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(64);
        void* a = strata_malloc(64);
        free_elsewhere(a);
        strata_collect(0);
        strata_free(a);
        strata_free(keep);
      },
      double_free);
}

TEST_F(HeapMisuse, BlockCarvedButNeverHandedOut) {
  EXPECT_DEATH(
      {
        void* a = strata_malloc(32);
        strata_free(at(a, 32 * 40));
      },
      "strata: heap corruption");
}

TEST_F(HeapMisuse, InteriorPointersOfSmallBlocks) {
  EXPECT_DEATH(strata_free(at(strata_malloc(32), 8)), not_handed_out);
  EXPECT_DEATH(strata_free(at(strata_malloc(32), 16)), not_handed_out);
  EXPECT_DEATH(strata_free(at(strata_malloc(400), 160)), not_handed_out);
}

TEST_F(HeapMisuse, InteriorPointerOfAMediumBlock) {
  EXPECT_DEATH(strata_free(at(strata_malloc(5000), 16)), not_handed_out);
  EXPECT_DEATH(strata_free(at(strata_malloc(5000), 1024)), not_handed_out);
  EXPECT_DEATH(strata_free(at(strata_malloc(70000), 4096)), not_handed_out);
}

TEST_F(HeapMisuse, InteriorPointerOfAHugeBlock) {
  EXPECT_DEATH(strata_free(at(strata_malloc(16 << 20), 4096)), not_handed_out);
}

TEST_F(HeapMisuse, InteriorPointerFreedByAnotherThread) {
  EXPECT_DEATH(free_elsewhere(at(strata_malloc(32), 16)), not_handed_out);
  EXPECT_DEATH(free_elsewhere(at(strata_malloc(5000), 16)), not_handed_out);
}

// Another thread's frees of list page blocks are checked when it posts them:
// a stray pointer among valid ones is still reported, and none is linked.
TEST_F(HeapMisuse, StrayPointersAmongAnotherThreadsFrees) {
  auto free_among_valid_ones = [](std::ptrdiff_t offset) {
    void* blocks[64];
    for (void*& b : blocks) b = strata_malloc(32);
    std::thread([&] {
      for (int i = 0; i < 32; ++i) strata_free(blocks[i]);
      strata_free(at(blocks[32], offset));
      for (int i = 33; i < 64; ++i) strata_free(blocks[i]);
    }).join();
  };
  EXPECT_DEATH(free_among_valid_ones(8), not_handed_out);
  EXPECT_DEATH(free_among_valid_ones(32 * 1500), not_handed_out);  // past the blocks carved
}

TEST_F(HeapMisuse, PointerIntoASegmentHeader) {
  EXPECT_DEATH(
      {
        void* p = strata_malloc(32);
        strata_free(at(strata::heap::segment_of(p), 4096));
      },
      not_handed_out);
}

TEST_F(HeapMisuse, PointerIntoAnUnusedSlice) {
  EXPECT_DEATH(
      {
        void* p = strata_malloc(32);
        auto* seg = strata::heap::segment_of(p);
        strata_free(seg->slice_start(strata::heap::slice_count - 3));
      },
      not_handed_out);
}

TEST_F(HeapMisuse, PointerIntoASliceWhosePageWasFreed) {
  EXPECT_DEATH(
      {
        // A two-slice page of 16 KiB blocks, freed, then its second slice freed into.
        void* p = strata_malloc(16 << 10);
        strata_free(p);
        strata_collect(1);
        strata_free(at(p, 64 << 10));
      },
      "strata: heap corruption");
}

// free() trusts a slice's descriptor that names this thread as the owner of
// the slice's page: a descriptor of any slice but a live page's first must name
// none, even where a page that has gone or a slice now inside a longer page had one.
TEST(HeapDescriptors, OnlyALivePagesFirstSliceHasAnOwner) {
  std::thread([] {
    std::vector<void*> blocks;
    for (int round = 0; round < 3; ++round) {
      for (std::size_t size = 16; size < (1 << 20); size = size * 5 / 4 + 16)
        for (int i = 0; i < 8; ++i) blocks.push_back(strata_malloc(size));
      // Free two in three, then let the emptied pages go: their slices serve
      // the next round's pages, longer and shorter ones.
      for (std::size_t i = 0; i < blocks.size(); ++i)
        if (i % 3 != 0) strata_free(std::exchange(blocks[i], nullptr));
      strata_collect(0);
    }
    std::set<strata::heap::segment*> segments;
    for (void* p : blocks)
      if (p != nullptr) segments.insert(strata::heap::segment_of(p));
    for (strata::heap::segment* seg : segments) {
      if (seg->huge) continue;
      for (std::size_t slice = 0; slice < strata::heap::slice_count; ++slice) {
        const strata::heap::page& d = seg->pages[slice];
        bool page_head = d.slice_count != 0 && d.slice_index == slice;
        if (!page_head) {
          EXPECT_EQ(d.owner.load(), 0u) << "slice " << slice;
        }
      }
    }
    for (void* p : blocks) strata_free(p);
  }).join();
}

TEST_F(HeapMisuse, MediumDoubleFreeWhileTheHotSlotIsEmpty) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(5000);
        void* a = strata_malloc(5000);
        void* b = strata_malloc(5000);
        strata_free(a);                     // the hot block
        strata_free(b);                     // its bit
        void* again = strata_malloc(5000);  // takes the hot block: the slot is empty
        strata_free(b);
        strata_free(again);
        strata_free(keep);
      },
      double_free);
}

// Free reads a slice's descriptor first and looks the page up only when that
// names no map page of this thread: a block in a two-slice page's second slice
// (16 KiB blocks, four to a slice) is checked as one in its first.
void misuse_in_second_slice(std::ptrdiff_t offset, bool twice) {
  void* blocks[8];
  for (void*& b : blocks) b = strata_malloc(16 << 10);
  char* late = nullptr;  // a block in a slice that is not its page's first
  for (void* b : blocks)
    if (strata::heap::segment_of(b)->slice_descriptor(b)->slice_count == 0) late = at(b, 0);
  ASSERT_NE(late, nullptr);
  if (twice) strata_free(late);
  strata_free(at(late, offset));
}

TEST_F(HeapMisuse, MediumMisuseInAPagesSecondSlice) {
  EXPECT_DEATH(misuse_in_second_slice(0, true), double_free);
  EXPECT_DEATH(misuse_in_second_slice(16, false), not_handed_out);
}

// The owner's frees into its map pages on the full list take a path of their
// own: a pointer inside a block of a full page is caught there, and a block
// another thread freed already once the owner collects that thread's frees.
void misuse_in_full_page(std::ptrdiff_t offset, bool twice) {
  void* blocks[24];
  for (void*& b : blocks) b = strata_malloc(20 << 10);  // the first pages go full
  if (twice) free_elsewhere(blocks[0]);
  strata_free(at(blocks[0], offset));
  for (void*& b : blocks) b = strata_malloc(20 << 10);  // collects the page
}

TEST_F(HeapMisuse, MediumMisuseInAFullPage) {
  EXPECT_DEATH(misuse_in_full_page(0, true), double_free);
  EXPECT_DEATH(misuse_in_full_page(16, false), not_handed_out);
}

TEST_F(HeapMisuse, MediumDoubleFreeOfTheHotBlock) {
  EXPECT_DEATH(double_free_at_once(5000), double_free);
}

TEST_F(HeapMisuse, MediumDoubleFreeByAnotherThread) {
  EXPECT_DEATH(double_free_by_another_thread(5000), double_free);
}

TEST_F(HeapMisuse, MediumFreedByOwnerThenByAnotherThread) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(5000);
        void* a = strata_malloc(5000);
        void* b = strata_malloc(5000);
        strata_free(b);
        strata_free(a);
        free_elsewhere(a);
        void* again = strata_malloc(5000);
        strata_collect(1);  // the owner collects the second free
        strata_free(again);
        strata_free(keep);
      },
      double_free);
}

TEST_F(HeapMisuse, HugeDoubleFree) {
  EXPECT_DEATH(double_free_at_once(16 << 20), double_free);
}

TEST_F(HeapMisuse, HugeDoubleFreeByAnotherThread) {
  EXPECT_DEATH(double_free_by_another_thread(16 << 20), double_free);
}

// The checks must not fire on correct use: blocks reused after free, blocks
// whose second word holds anything, aligned blocks freed by their pointer.
TEST(HeapMisuseChecks, AcceptCorrectUse) {
  for (int round = 0; round < 3; ++round) {
    void* blocks[512];
    for (int i = 0; i < 512; ++i) {
      blocks[i] = strata_malloc(16 + (i % 40) * 24);
      std::memset(blocks[i], 0xa5, 16);
    }
    for (int i = 0; i < 512; i += 2) free_elsewhere(blocks[i]);
    for (int i = 1; i < 512; i += 2) strata_free(blocks[i]);
    strata_collect(0);
  }
  for (std::size_t alignment = 32; alignment <= (1u << 20); alignment *= 4) {
    void* p = strata_malloc_aligned(100, alignment);
    ASSERT_NE(p, nullptr);
    strata_free(p);
  }
  void* map_blocks[40];
  for (void*& p : map_blocks) p = strata_malloc(6000);
  for (void* p : map_blocks) free_elsewhere(p);
  for (void*& p : map_blocks) p = strata_malloc(6000);
  for (void* p : map_blocks) strata_free(p);
}

}  // namespace

namespace {

// A first-class heap belongs to its creator: another thread's call is refused.
TEST_F(HeapMisuse, FirstClassHeapDestroyedByAnotherThread) {
  EXPECT_DEATH(
      {
        strata_heap_t* h = strata_heap_new();
        void* p = strata_heap_malloc(h, 64);
        std::thread([h] { strata_heap_destroy(h); }).join();
        strata_free(p);
      },
      "strata: strata_heap_destroy called from a thread that does not own heap");
}

TEST_F(HeapMisuse, FirstClassHeapAllocatedFromByAnotherThread) {
  EXPECT_DEATH(
      {
        strata_heap_t* h = strata_heap_new();
        std::thread([h] { strata_free(strata_heap_malloc(h, 64)); }).join();
      },
      "strata: strata_heap_malloc called from a thread that does not own heap");
}

// Growth past what any machine holds fails and leaves the block as it was.
TEST(HeapEdges, HugeBlockResizedPastEveryMachineStaysIntact) {
  auto* p = static_cast<unsigned char*>(strata_malloc(20 << 20));
  ASSERT_NE(p, nullptr);
  for (std::size_t i = 0; i < (20u << 20); i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
  errno = 0;
  EXPECT_EQ(strata_realloc(p, SIZE_MAX), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(strata_expand(p, SIZE_MAX), nullptr);
  EXPECT_EQ(strata_expand(p, SIZE_MAX - 4096), nullptr);
  strata_heap_t* h = strata_heap_default();
  errno = 0;
  EXPECT_EQ(strata_heap_realloc(h, p, SIZE_MAX / 2), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  for (std::size_t i = 0; i < (20u << 20); i += 4096)
    ASSERT_EQ(p[i], static_cast<unsigned char>(i >> 12));
  strata_free(p);
  errno = 0;
  EXPECT_EQ(strata_malloc(std::size_t{1} << 46), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(strata_calloc(std::size_t{1} << 23, std::size_t{1} << 23), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

}  // namespace

namespace {

// STRATA_SHOW_ERRORS prints one line for each allocation refused.
TEST(HeapEdges, ShowErrorsPrintsARefusedAllocation) {
  strata_option_set(STRATA_OPTION_SHOW_ERRORS, 1);
  ::testing::internal::CaptureStderr();
  void* p = strata_malloc(std::size_t{1} << 46);
  void* q = strata_malloc_aligned(64, 48);
  std::string printed = ::testing::internal::GetCapturedStderr();
  strata_option_set(STRATA_OPTION_SHOW_ERRORS, 0);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(q, nullptr);
  EXPECT_NE(printed.find("strata: error: malloc(70368744177664): Cannot allocate memory"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("strata: error: malloc_aligned(64, alignment 48): Invalid argument"),
            std::string::npos)
      << printed;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(strata_malloc(std::size_t{1} << 46), nullptr);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace

namespace {

// Alignments of the segment size and more: a block of its own, freeable from
// any thread, its size known, growable by copy.
TEST(HeapEdges, AlignmentsOfThirtyTwoMiBAndMore) {
  for (std::size_t alignment :
       {std::size_t{32} << 20, std::size_t{64} << 20, std::size_t{1} << 30}) {
    void* p = nullptr;
    ASSERT_EQ(strata_posix_memalign(&p, alignment, 100), 0) << alignment;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
    EXPECT_GE(strata_usable_size(p), 100u);
    std::memset(p, 7, 100);
    p = strata_realloc(p, 200);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(static_cast<unsigned char*>(p)[99], 7);
    strata_free(p);
    void* q = strata_malloc_aligned(5000, alignment);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % alignment, 0u);
    free_elsewhere(q);
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void* p = strata_malloc_aligned(64, std::size_t{64} << 20);
        strata_free(static_cast<char*>(p) + 4096);
      },
      not_handed_out);
}

}  // namespace

namespace {

// realloc and strata_expand check their pointer as free does.
TEST_F(HeapMisuse, ResizingAFreedOrInteriorPointer) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(64);
        void* p = strata_malloc(64);
        strata_free(p);
        (void)!strata_realloc(p, 32);
        strata_free(keep);
      },
      double_free);
  EXPECT_DEATH((void)!strata_realloc(at(strata_malloc(64), 16), 20), not_handed_out);
  EXPECT_DEATH((void)!strata_expand(at(strata_malloc(5000), 8), 20), not_handed_out);
  EXPECT_DEATH(
      {
        void* p = strata_malloc(5000);
        void* keep = strata_malloc(5000);
        strata_free(p);
        (void)!strata_expand(p, 10);
        strata_free(keep);
      },
      double_free);
}

}  // namespace
