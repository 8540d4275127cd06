// STRATA_ARENA_RESERVE: segments come from one range reserved up front.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "heap/segment.hpp"
#include "strata/strata.h"

namespace {

// The only test of this program: the option must be set before the first segment.
TEST(HeapReserve, SegmentsAreCutFromTheUpFrontRange) {
  constexpr std::size_t reserve = std::size_t{256} << 20;
  strata_option_set(STRATA_OPTION_ARENA_RESERVE, static_cast<long>(reserve));
  std::vector<void*> blocks;
  for (std::size_t size : {std::size_t{64}, std::size_t{5000}, std::size_t{20} << 20,
                           std::size_t{40} << 20, std::size_t{100}, std::size_t{33} << 20}) {
    void* p = strata_malloc(size);
    ASSERT_NE(p, nullptr);
    blocks.push_back(p);
  }
  auto address = [](void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  auto [low, high] = std::minmax_element(blocks.begin(), blocks.end(),
                                         [&](void* a, void* b) { return address(a) < address(b); });
  EXPECT_LT(address(*high) - address(*low), reserve);
  // The range is cut upwards, where the OS maps top-down: each new segment lies higher.
  EXPECT_LT(address(blocks[0]), address(blocks[2]));
  EXPECT_LT(address(blocks[2]), address(blocks[3]));
  EXPECT_LT(address(blocks[3]), address(blocks[5]));
  // Once the range is used up, segments come from the OS as before.
  std::vector<void*> more;
  for (int i = 0; i < 8; ++i) {
    void* p = strata_malloc(std::size_t{48} << 20);
    ASSERT_NE(p, nullptr);
    more.push_back(p);
  }
  for (void* p : more) strata_free(p);
  for (void* p : blocks) strata_free(p);
}

}  // namespace
