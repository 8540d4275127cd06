// Debug mode (STRATA_DEBUG=1, set by CTest for this program) and
// strata_heap_check: a write past a block is caught at its free, a write into
// a freed block when it is handed out again or checked, and a heap that was
// used correctly checks clean.
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "repeated_block.hpp"
#include "strata/strata.h"

namespace {

class HeapDebug : public ::testing::Test {
 protected:
  void SetUp() override {
    if (strata_option_get(STRATA_OPTION_DEBUG) == 0) GTEST_SKIP() << "needs STRATA_DEBUG=1";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(HeapDebug, UsableSizeIsTheSizeAskedFor) {
  for (std::size_t size : {1u, 40u, 100u, 1000u, 5000u, 70000u}) {
    void* p = strata_malloc(size);
    EXPECT_EQ(strata_usable_size(p), size);
    strata_free(p);
  }
}

TEST_F(HeapDebug, AWritePastTheBlockIsCaughtAtItsFree) {
  EXPECT_DEATH(
      {
        auto* p = static_cast<char*>(strata_malloc(40));
        p[40] = 'x';
        strata_free(p);
      },
      "strata: heap corruption: .* after the block overwritten \\(buffer overflow\\)");
  EXPECT_DEATH(
      {
        auto* p = static_cast<char*>(strata_malloc(6000));
        p[6001] = 'x';
        strata_free(p);
      },
      "strata: heap corruption: .* after the block overwritten \\(buffer overflow\\)");
}

TEST_F(HeapDebug, AWriteIntoAFreedBlockIsCaughtWhenItComesBack) {
  EXPECT_DEATH(
      {
        auto* p = static_cast<char*>(strata_malloc(48));
        strata_free(p);
        p[20] = 1;
        for (int i = 0; i < 100000; ++i) (void)!strata_malloc(48);
      },
      "strata: heap corruption: freed block written to");
}

TEST_F(HeapDebug, HeapCheckFindsAWriteIntoAFreedBlock) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(64);
        auto* p = static_cast<char*>(strata_malloc(64));
        strata_free(p);
        p[30] = 1;
        strata_heap_check(nullptr);
        strata_free(keep);
      },
      "strata: heap corruption: freed block written to");
}

TEST_F(HeapDebug, ADoubleFreeIsCaught) {
  EXPECT_DEATH(
      {
        void* p = strata_malloc(64);
        strata_free(p);
        strata_free(p);
      },
      "strata: heap corruption: double free");
}

TEST_F(HeapDebug, CorrectUseChecksClean) {
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) {
    std::size_t size = 1 + (static_cast<std::size_t>(i) * 7919) % 9000;
    auto* p = static_cast<unsigned char*>(strata_malloc(size));
    std::memset(p, 0x33, size);
    blocks.push_back(p);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 3) strata_free(blocks[i]);
  EXPECT_EQ(strata_heap_check(nullptr), 1);
  for (std::size_t alignment : {32u, 256u, 4096u}) {
    void* p = strata_malloc_aligned(100, alignment);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
    strata_free(p);
  }
  void* grown = strata_realloc(strata_malloc(10), 300);
  EXPECT_EQ(strata_usable_size(grown), 300u);
  strata_free(grown);
  for (std::size_t i = 1; i < blocks.size(); ++i)
    if (i % 3 != 0) strata_free(blocks[i]);
  EXPECT_EQ(strata_heap_check(nullptr), 1);
}

// Without debug mode the check still reads every free list.
// A debug block holds a size record, so 4 MiB takes the next class: the one
// whose page must be kept (the class asked for was marked, not the one used).
TEST_F(HeapDebug, ALargeBlockAllocatedOverAndOverKeepsItsPage) {
  strata_collect(1);  // a small heap gives an emptied one-block page back at once
  EXPECT_LE(strata_test_heap::os_calls_of_repeated_block(4 << 20, 100), 4u);
}

TEST(HeapCheck, FindsAnOverwrittenFreeListLink) {
  if (strata_option_get(STRATA_OPTION_DEBUG) != 0 || strata_option_get(STRATA_OPTION_SECURE) != 0)
    GTEST_SKIP() << "default mode only";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(64);
        void* p = strata_malloc(64);
        strata_free(p);
        void* forged = &keep;
        std::memcpy(p, &forged, sizeof(forged));
        strata_heap_check(nullptr);
      },
      "strata: heap corruption: free list link overwritten");
}

TEST(HeapCheck, AHealthyHeapChecksClean) {
  std::vector<void*> blocks;
  for (int i = 0; i < 500; ++i) blocks.push_back(strata_malloc(16 + i * 13));
  for (std::size_t i = 0; i < blocks.size(); i += 2) strata_free(blocks[i]);
  EXPECT_EQ(strata_heap_check(nullptr), 1);
  strata_heap_t* h = strata_heap_new();
  for (int i = 0; i < 100; ++i) (void)!strata_heap_malloc(h, 24 + i);
  EXPECT_EQ(strata_heap_check(h), 1);
  strata_heap_destroy(h);
  for (std::size_t i = 1; i < blocks.size(); i += 2) strata_free(blocks[i]);
}

}  // namespace
