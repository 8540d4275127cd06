// bfc's answers to bad input: zero bytes is a distinct block; a request no
// region can hold throws std::bad_alloc naming the size; a bad alignment
// throws std::invalid_argument; double, foreign and interior frees abort
// with one line, before the free structures change.
#include <strata/bfc.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using strata::bfc;
using strata::bfc_config;

TEST(BfcBadInput, ZeroBytesIsADistinctBlock) {
  bfc<> pool;
  void* a = pool.allocate(0);
  void* b = pool.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

TEST(BfcBadInput, TooLargeThrowsBadAllocWithTheSize) {
  bfc_config config;
  config.max_region_bytes = 1 << 20;
  bfc<> pool(config);
  void* kept = pool.allocate(100);
  try {
    pool.allocate(3 << 20);
    FAIL() << "no exception";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("3145728"), std::string::npos) << e.what();
  }
  try {
    pool.allocate(SIZE_MAX);
    FAIL() << "no exception";
  } catch (const strata::capacity_error& e) {
    EXPECT_EQ(e.bytes(), SIZE_MAX);
  }
  EXPECT_THROW(pool.allocate(64, std::size_t{1} << 62), std::bad_alloc);
  EXPECT_EQ(pool.statistics().chunks_in_use, 1u) << "a refusal changes nothing";
  pool.deallocate(kept, 100);
}

TEST(BfcBadInput, BadAlignmentThrowsInvalidArgument) {
  bfc<> pool;
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{24}})
    EXPECT_THROW(pool.allocate(64, alignment), std::invalid_argument);
  EXPECT_EQ(pool.statistics().regions, 0u);
}

TEST(BfcBadInput, BadConfigurationThrowsInvalidArgument) {
  bfc_config config;
  config.granule = 48;
  EXPECT_THROW(bfc<>{config}, std::invalid_argument);
}

TEST(BfcBadInputDeathTest, DoubleFreeAborts) {
  bfc<> pool;
  void* a = pool.allocate(256);
  void* b = pool.allocate(256);
  pool.deallocate(a, 256);
  EXPECT_DEATH(pool.deallocate(a, 256), "strata: double free of a bfc block");
  pool.deallocate(b, 256);
}

TEST(BfcBadInputDeathTest, MergedFreeAborts) {
  bfc<> pool;
  void* a = pool.allocate(256);
  void* b = pool.allocate(256);
  void* c = pool.allocate(256);
  pool.deallocate(a, 256);
  pool.deallocate(b, 256);  // merged into a's chunk
  EXPECT_DEATH(pool.deallocate(b, 256), "strata: double free of a bfc block");
  pool.deallocate(c, 256);
}

TEST(BfcBadInputDeathTest, ForeignAndInteriorFreesAbort) {
  bfc<> pool;
  void* a = pool.allocate(256);
  int local = 0;
  EXPECT_DEATH(pool.deallocate(&local, 4), "strata: bfc free of a pointer it did not hand out");
  EXPECT_DEATH(pool.deallocate(static_cast<char*>(a) + 64, 64),
               "strata: bfc free of a pointer that is not a live block");
  EXPECT_DEATH(pool.deallocate(a, 100000), "freed with a size larger than it has");
  pool.deallocate(a, 256);
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

}  // namespace
