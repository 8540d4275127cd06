// Slice bitmap operations checked against a bit-by-bit model on random maps.
#include "heap/slice_bitmap.hpp"

#include <array>
#include <random>

#include <gtest/gtest.h>

using namespace strata::heap;

namespace {

constexpr std::size_t words = 8;
constexpr std::size_t bits = words * 64;
using bitmap = std::array<std::uint64_t, words>;

bool model_test(const bitmap& map, std::size_t i) {
  return (map[i / 64] >> (i % 64)) & 1;
}

std::size_t model_find_run(const bitmap& map, std::size_t from, std::size_t count) {
  std::size_t run = 0;
  for (std::size_t i = from; i < bits; ++i) {
    run = model_test(map, i) ? run + 1 : 0;
    if (run == count) return i + 1 - count;
  }
  return bits;
}

// The first bit at or after `from` that is set with both neighbours clear.
std::size_t model_find_lone(const bitmap& map, std::size_t from) {
  for (std::size_t i = from; i < bits; ++i) {
    bool below = i > 0 && model_test(map, i - 1);
    bool above = i + 1 < bits && model_test(map, i + 1);
    if (model_test(map, i) && !below && !above) return i;
  }
  return bits;
}

// The start of the shortest run of at least `count` set bits from `from` on
// (a run crossing `from` counts from there), the first of equal ones.
std::size_t model_find_shortest_run(const bitmap& map, std::size_t from, std::size_t count) {
  std::size_t best = bits;
  std::size_t best_length = bits + 1;
  for (std::size_t i = from; i < bits;) {
    if (!model_test(map, i)) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < bits && model_test(map, end)) ++end;
    if (end - i >= count && end - i < best_length) {
      best = i;
      best_length = end - i;
    }
    i = end;
  }
  return best;
}

// The first bit set in `starts` where a run of `count` set bits of `map` begins.
std::size_t model_find_run_at(const bitmap& map, const bitmap& starts, std::size_t count) {
  for (std::size_t i = 0; i + count <= bits; ++i) {
    if (!model_test(starts, i)) continue;
    std::size_t end = i;
    while (end < i + count && model_test(map, end)) ++end;
    if (end == i + count) return i;
  }
  return bits;
}

// Maps of long runs and short gaps, as segments have, and of dense noise.
bitmap random_map(std::mt19937_64& random) {
  bitmap map{};
  bool value = random() & 1;
  std::size_t run_scale = 1 + random() % 80;
  for (std::size_t i = 0; i < bits;) {
    std::size_t run = 1 + random() % run_scale;
    for (std::size_t j = i; j < i + run && j < bits; ++j)
      if (value) map[j / 64] |= std::uint64_t{1} << (j % 64);
    i += run;
    value = !value;
  }
  return map;
}

}  // namespace

TEST(SliceBitmap, RunSearchesMatchTheBitByBitSearches) {
  std::mt19937_64 random(42);
  for (int round = 0; round < 4000; ++round) {
    bitmap map = random_map(random);
    std::size_t from = random() % bits;
    std::size_t count = 1 + random() % 130;
    ASSERT_EQ(slice_bitmap::find_run(map.data(), bits, from, count),
              model_find_run(map, from, count))
        << "round " << round;
    ASSERT_EQ(slice_bitmap::find_shortest_run(map.data(), bits, from, count),
              model_find_shortest_run(map, from, count))
        << "round " << round;
  }
}

TEST(SliceBitmap, RunsAtGivenStartsMatchTheBitByBitSearch) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 4000; ++round) {
    bitmap map = random_map(random);
    bitmap starts{};
    for (int n = static_cast<int>(random() % 12); n > 0; --n) {
      std::size_t i = random() % bits;
      starts[i / 64] |= std::uint64_t{1} << (i % 64);
    }
    std::size_t count = 1 + random() % 40;
    ASSERT_EQ(slice_bitmap::find_run_at(map.data(), starts.data(), bits, count),
              model_find_run_at(map, starts, count))
        << "round " << round;
  }
}

TEST(SliceBitmap, FindRunOnFullAndEmptyMaps) {
  bitmap full;
  full.fill(~std::uint64_t{0});
  bitmap empty{};
  EXPECT_EQ(slice_bitmap::find_run(full.data(), bits, 1, bits - 1), 1u);
  EXPECT_EQ(slice_bitmap::find_run(full.data(), bits, 1, bits), bits);  // runs stop at `bits`
  EXPECT_EQ(slice_bitmap::find_run(empty.data(), bits, 0, 1), bits);
}

TEST(SliceBitmap, AssignAndCountTouchExactlyTheRange) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 4000; ++round) {
    bitmap map = random_map(random);
    std::size_t first = random() % bits;
    std::size_t count = random() % (bits - first + 1);
    bool value = random() & 1;

    std::size_t expected_count = 0;
    for (std::size_t i = first; i < first + count; ++i) expected_count += model_test(map, i);
    ASSERT_EQ(slice_bitmap::count(map.data(), first, count), expected_count);

    bitmap before = map;
    slice_bitmap::assign(map.data(), first, count, value);
    for (std::size_t i = 0; i < bits; ++i) {
      bool inside = i >= first && i < first + count;
      ASSERT_EQ(model_test(map, i), inside ? value : model_test(before, i))
          << "bit " << i << " of [" << first << ", " << first + count << ")";
    }
  }
}

TEST(SliceBitmap, NextFindsEitherValue) {
  std::mt19937_64 random(3);
  for (int round = 0; round < 2000; ++round) {
    bitmap map = random_map(random);
    std::size_t from = random() % (bits + 1);
    bool value = random() & 1;
    std::size_t expected = from;
    while (expected < bits && model_test(map, expected) != value) ++expected;
    ASSERT_EQ(slice_bitmap::next(map.data(), bits, from, value), expected);
  }
}

TEST(SliceBitmap, FindLoneMatchesTheBitByBitSearch) {
  std::mt19937_64 random(11);
  for (int round = 0; round < 4000; ++round) {
    bitmap map = random_map(random);
    std::size_t from = random() % bits;
    ASSERT_EQ(slice_bitmap::find_lone(map.data(), bits, from), model_find_lone(map, from))
        << "round " << round;
  }
}

TEST(SliceBitmap, FindLoneSeesNeighboursAcrossWords) {
  bitmap map{};
  map[0] = std::uint64_t{1} << 63;  // bit 63 touches bit 64
  map[1] = 1;
  map[2] = 1;  // bit 128 is alone
  EXPECT_EQ(slice_bitmap::find_lone(map.data(), bits, 0), 128u);
  map[7] = std::uint64_t{1} << 63;  // the last bit has no neighbour above
  EXPECT_EQ(slice_bitmap::find_lone(map.data(), bits, 129), bits - 1);
}

TEST(SliceBitmap, FindShortestRunPrefersTheTightestFit) {
  bitmap map{};
  slice_bitmap::assign(map.data(), 10, 20, true);  // 20 long
  slice_bitmap::assign(map.data(), 40, 5, true);   // 5 long
  slice_bitmap::assign(map.data(), 100, 8, true);  // 8 long
  slice_bitmap::assign(map.data(), 200, 8, true);  // 8 long, later
  EXPECT_EQ(slice_bitmap::find_shortest_run(map.data(), bits, 0, 4), 40u);
  EXPECT_EQ(slice_bitmap::find_shortest_run(map.data(), bits, 0, 6), 100u);
  EXPECT_EQ(slice_bitmap::find_shortest_run(map.data(), bits, 0, 9), 10u);
  EXPECT_EQ(slice_bitmap::find_shortest_run(map.data(), bits, 0, 21), bits);
}
