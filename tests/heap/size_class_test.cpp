// Exhaustive size-class tests over every size up to the largest class.
#include "heap/size_class.hpp"

#include <cstdio>

#include <gtest/gtest.h>

using namespace strata::heap;

TEST(SizeClass, EverySizeFitsMonotonicWithBoundedWaste) {
  std::size_t previous = 0;
  double worst = 0;
  std::size_t worst_size = 0;
  for (std::size_t size = 1; size <= medium_max; ++size) {
    std::size_t cls = size_class_of(size);
    ASSERT_LT(cls, class_count) << size;
    std::size_t block = class_block_size(cls);
    ASSERT_GE(block, size) << size;
    ASSERT_GE(cls, previous) << size;
    if (cls > 0) {
      ASSERT_LT(class_block_size(cls - 1), size) << size;  // the smallest class that fits
    }
    previous = cls;
    if (size > 48) {
      double waste = static_cast<double>(block - size) / static_cast<double>(block);
      if (waste > worst) worst = waste, worst_size = size;
    } else {
      ASSERT_LT(block - size, min_block_size) << size;  // below 48 B only 16-byte rounding
    }
  }
  std::printf("worst internal waste above 48 B: %.1f%% at %zu bytes\n", worst * 100, worst_size);
  EXPECT_LE(worst, 0.25);
}

TEST(SizeClass, TableMatchesFormulaAndAlignment) {
  for (std::size_t c = 0; c < class_count; ++c) {
    EXPECT_EQ(class_block_size(c), class_size_formula(c));
    EXPECT_EQ(class_block_size(c) % 16, 0u);
    EXPECT_EQ(size_class_of(class_block_size(c)), c);
    if (c > 0) {
      EXPECT_GT(class_block_size(c), class_block_size(c - 1));
    }
  }
  EXPECT_EQ(size_class_of(0), 0u);
  EXPECT_EQ(class_block_size(class_count - 1), medium_max);
}

TEST(SizeClass, DirectSlotsAgreeWithClassOf) {
  for (std::size_t size = 1; size <= small_max; ++size)
    ASSERT_EQ(small_class_of_slot[(size + 15) / 16], size_class_of(size)) << size;
}

TEST(SizeClass, MediumTablesAgreeWithClassOf) {
  for (std::size_t size = small_max + 1; size <= medium_max; ++size)
    ASSERT_EQ(medium_class_of(size), size_class_of(size)) << size;
}

// Four classes per power of two, eight from 256 B to 32 KiB (a payload with a
// header: redis's 262-byte strings take 288 bytes, sqlite's 4,368-byte pages 4,368).
TEST(SizeClass, ClassesPerPowerOfTwo) {
  for (std::size_t k = 8; k <= 23; ++k) {
    std::size_t lo = size_class_of((std::size_t{1} << (k - 1)) + 1);
    std::size_t hi = size_class_of(std::size_t{1} << k);
    EXPECT_EQ(hi - lo + 1, k >= 9 && k <= 15 ? 8u : 4u) << k;
  }
  EXPECT_EQ(class_block_size(size_class_of(262)), 288u);
  EXPECT_EQ(class_block_size(size_class_of(4368)), 4368u);
  EXPECT_EQ(class_block_size(size_class_of(4369)), 4672u);
  EXPECT_EQ(class_block_size(size_class_of(8200)), 8736u);
}

// From 4 to 16 KiB a class's blocks fill their page (one 64 KiB slice to
// 8 KiB, two above) with less than one 16-byte step left over per block.
TEST(SizeClass, FourToSixteenKiBClassesFillTheirPage) {
  for (std::size_t c = size_class_of(4097); c <= size_class_of(16384); ++c) {
    std::size_t block = class_block_size(c);
    std::size_t page = block <= 8192 ? 65536 : 131072;
    EXPECT_LT(page % block, 16 * (page / block)) << block;
  }
}
