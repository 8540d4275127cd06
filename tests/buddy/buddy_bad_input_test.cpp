// buddy's answers to bad input: zero bytes is a distinct block; a request
// above the region throws std::bad_alloc naming the size; a bad alignment
// throws std::invalid_argument; double, foreign and interior frees abort
// with one line, before the free bitmaps change.
#include <strata/buddy.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using strata::buddy;
using strata::buddy_config;

constexpr buddy_config small{.total_bytes = 1 << 20, .min_block = 64};

TEST(BuddyBadInput, ZeroBytesIsADistinctBlock) {
  buddy<> pool(small);
  void* a = pool.allocate(0);
  void* b = pool.allocate(0);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

TEST(BuddyBadInput, TooLargeThrowsBadAllocWithTheSize) {
  buddy<> pool(small);
  try {
    pool.allocate((1 << 20) + 1);
    FAIL() << "no exception";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("1048577"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pool.allocate(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW(pool.allocate(64, 1 << 13), std::bad_alloc);  // above the region's alignment
  void* all = pool.allocate(1 << 20);
  EXPECT_THROW(pool.allocate(0), std::bad_alloc);  // full
  pool.deallocate(all, 1 << 20);
  EXPECT_EQ(pool.statistics().largest_free, 1u << 20);
}

TEST(BuddyBadInput, BadAlignmentAndConfigurationThrowInvalidArgument) {
  buddy<> pool(small);
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{24}})
    EXPECT_THROW(pool.allocate(64, alignment), std::invalid_argument);
  EXPECT_THROW(buddy<>(buddy_config{.total_bytes = 3 << 20, .min_block = 64}),
               std::invalid_argument);
  EXPECT_THROW(buddy<>(buddy_config{.total_bytes = 1 << 20, .min_block = 8}),
               std::invalid_argument);
}

TEST(BuddyBadInputDeathTest, DoubleFreeAborts) {
  buddy<> pool(small);
  void* a = pool.allocate(100);
  void* b = pool.allocate(100);
  pool.deallocate(a, 100);
  EXPECT_DEATH(pool.deallocate(a, 100), "strata: double free of a buddy block");
  pool.deallocate(b, 100);  // merges a's block: a is inside a free block still
  EXPECT_DEATH(pool.deallocate(b, 100), "strata: double free of a buddy block");
}

TEST(BuddyBadInputDeathTest, ForeignAndInteriorFreesAbort) {
  buddy<> pool(small);
  void* a = pool.allocate(1000);
  int local = 0;
  EXPECT_DEATH(pool.deallocate(&local, 4), "strata: buddy free of a pointer it did not hand out");
  EXPECT_DEATH(pool.deallocate(static_cast<char*>(a) + 64, 64),
               "strata: buddy free of a pointer that is not a live block");
  EXPECT_DEATH(pool.deallocate(static_cast<char*>(a) + 8, 8),
               "strata: buddy free of a pointer that is not a live block");
  EXPECT_DEATH(pool.deallocate(a, 5000), "freed with a size larger than it has");
  pool.deallocate(a, 1000);
  EXPECT_EQ(pool.statistics().largest_free, 1u << 20);
}

}  // namespace
