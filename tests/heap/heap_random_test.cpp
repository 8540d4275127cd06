// Randomised operation sequences checked against a shadow model (fixed seeds).
#include <cmath>

#include "heap_shadow.hpp"

namespace {

enum class op { malloc, calloc, realloc, aligned, free, usable_size, heap_malloc };

void run_sequence(std::uint64_t seed, int steps, std::size_t max_size) {
  std::mt19937_64 rng(seed);
  shadow_heap shadow;
  strata_heap_t* side = strata_heap_new();
  std::vector<void*> order;  // live pointers for random picks
  std::uniform_int_distribution<int> pick_op(0, 9);
  for (int step = 0; step < steps; ++step) {
    int choice = pick_op(rng);
    std::uint8_t tag = static_cast<std::uint8_t>(step);
    std::size_t size = log_uniform_size(rng, max_size);
    if (order.empty() || choice < 4) {
      void* p = choice == 1   ? strata_calloc(1, size)
                : choice == 2 ? strata_heap_malloc(side, size)
                              : strata_malloc(size);
      if (choice == 1) {
        for (std::size_t i = 0; i < size; i += 97) ASSERT_EQ(static_cast<char*>(p)[i], 0);
      }
      ASSERT_NO_FATAL_FAILURE(shadow.add(p, size, 16, tag));
      order.push_back(p);
    } else if (choice == 4) {
      std::size_t alignment = std::size_t{1} << std::uniform_int_distribution<int>(4, 20)(rng);
      void* p = strata_malloc_aligned(size, alignment);
      ASSERT_NO_FATAL_FAILURE(shadow.add(p, size, alignment, tag));
      order.push_back(p);
    } else {
      std::size_t index = std::uniform_int_distribution<std::size_t>(0, order.size() - 1)(rng);
      void* p = order[index];
      if (choice == 5) {  // realloc keeps the common prefix
        ASSERT_NO_FATAL_FAILURE(shadow.verify(p));
        shadow_block old = shadow.live().at(p);
        if (old.alignment > 16) continue;
        void* q = strata_realloc(p, size);
        ASSERT_NE(q, nullptr);
        auto* bytes = static_cast<std::uint8_t*>(q);
        for (std::size_t i = 0; i < std::min(size, old.size); i += 131)
          ASSERT_EQ(bytes[i], old.tag);
        shadow.live().erase(p);
        ASSERT_NO_FATAL_FAILURE(shadow.add(q, size, 16, tag));
        order[index] = q;
      } else if (choice == 6) {
        ASSERT_GE(strata_usable_size(p), shadow.live().at(p).size);
      } else {
        ASSERT_NO_FATAL_FAILURE(shadow.remove(p));
        strata_free(p);
        order[index] = order.back();
        order.pop_back();
      }
    }
  }
  for (void* p : order) {
    ASSERT_NO_FATAL_FAILURE(shadow.remove(p));
    strata_free(p);
  }
  strata_heap_delete(side);
}

}  // namespace

TEST(HeapRandom, SmallSizes) {
  run_sequence(1, 200000, 2048);
}
TEST(HeapRandom, MediumSizes) {
  run_sequence(2, 60000, 1 << 20);
}
TEST(HeapRandom, AllSizesUpTo8MiB) {
  run_sequence(3, 8000, 8 << 20);
}
TEST(HeapRandom, BeyondTheLargestClass) {
  run_sequence(4, 600, 64 << 20);
}

TEST(HeapRandom, StatisticsReturnToTheirStart) {
  strata_stats_t before;
  strata_stats_get(&before);
  run_sequence(5, 20000, 1 << 20);
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.huge_in_use, before.huge_in_use);
  EXPECT_EQ(after.mallocs - before.mallocs, after.frees - before.frees);
  std::uint64_t class_total = 0;
  for (std::size_t c = 0; c < STRATA_SIZE_CLASSES; ++c) class_total += after.class_mallocs[c];
  EXPECT_LE(class_total, after.mallocs);
  EXPECT_GE(after.peak_in_use, after.in_use);
  EXPECT_GE(after.committed, after.in_use);
  EXPECT_GE(after.reserved, after.committed);
}
