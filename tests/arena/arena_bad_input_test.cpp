// The monotonic arena on bad input: every entry point gives its documented
// answer (std::invalid_argument, std::bad_alloc, null for try_allocate) and
// leaves the arena as it was.
#include <strata/arena.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <stdexcept>

namespace {

using strata::monotonic_arena;

constexpr std::size_t huge_alignment = std::size_t{1} << 63;

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// A block from `arena` right after the bad calls: it must be where the cursor
// was, so the bad calls moved nothing.
template <class Arena>
void expect_cursor_kept(Arena& arena, const char* before, std::size_t left) {
  EXPECT_EQ(arena.bytes_left_in_chunk(), left);
  void* next = arena.allocate(16, 16);
  EXPECT_GE(static_cast<const char*>(next), before);
  EXPECT_LT(static_cast<const char*>(next), before + 16);
}

TEST(ArenaBadInput, TryAllocateWithAlignmentZeroIsNullAndKeepsTheCursor) {
  monotonic_arena<> arena;
  auto* first = static_cast<char*>(arena.allocate(16));
  std::size_t left = arena.bytes_left_in_chunk();
  EXPECT_EQ(arena.try_allocate(16, 0), nullptr);
  expect_cursor_kept(arena, first + 16, left);
}

TEST(ArenaBadInput, TryAllocateWithAlignmentNotAPowerOfTwoIsNull) {
  monotonic_arena<> arena;
  auto* first = static_cast<char*>(arena.allocate(16));
  std::size_t left = arena.bytes_left_in_chunk();
  for (std::size_t alignment : {std::size_t{3}, std::size_t{24}, SIZE_MAX})
    EXPECT_EQ(arena.try_allocate(16, alignment), nullptr) << alignment;
  expect_cursor_kept(arena, first + 16, left);
}

TEST(ArenaBadInput, TryAllocateHugeSizeOrAlignmentIsNull) {
  monotonic_arena<> arena;
  auto* first = static_cast<char*>(arena.allocate(16));
  std::size_t left = arena.bytes_left_in_chunk();
  EXPECT_EQ(arena.try_allocate(SIZE_MAX, 1), nullptr);
  EXPECT_EQ(arena.try_allocate(SIZE_MAX - 8, 16), nullptr);
  EXPECT_EQ(arena.try_allocate(left + 1, 1), nullptr);
  EXPECT_EQ(arena.try_allocate(16, huge_alignment), nullptr);
  EXPECT_EQ(arena.try_allocate(SIZE_MAX, huge_alignment), nullptr);
  expect_cursor_kept(arena, first + 16, left);
}

TEST(ArenaBadInput, TryAllocateOnAnEmptyArenaIsNull) {
  monotonic_arena<> arena;
  EXPECT_EQ(arena.try_allocate(16), nullptr);
  EXPECT_EQ(arena.try_allocate(0), nullptr);
  EXPECT_EQ(arena.try_allocate(16, 0), nullptr);
}

TEST(ArenaBadInput, TryAllocateZeroBytesGivesDistinctBlocks) {
  monotonic_arena<> arena;
  (void)arena.allocate(1);
  void* a = arena.try_allocate(0);
  void* b = arena.try_allocate(0);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, b);
}

TEST(ArenaBadInput, AllocateBadAlignmentThrowsAndKeepsTheCursor) {
  monotonic_arena<> arena;
  auto* first = static_cast<char*>(arena.allocate(16));
  std::size_t left = arena.bytes_left_in_chunk();
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, SIZE_MAX})
    EXPECT_THROW((void)arena.allocate(16, alignment), std::invalid_argument) << alignment;
  expect_cursor_kept(arena, first + 16, left);
}

// malloc that refuses what no machine has, as malloc does: AddressSanitizer's
// would abort instead.
struct bounded_malloc_resource : strata::malloc_resource {
  void* allocate(std::size_t bytes, std::size_t alignment) {
    if (bytes > (std::size_t{1} << 40) || alignment > (std::size_t{1} << 40))
      throw std::bad_alloc();
    return malloc_resource::allocate(bytes, alignment);
  }
};

TEST(ArenaBadInput, AllocateHugeSizeOrAlignmentThrowsBadAllocAndKeepsTheCursor) {
  monotonic_arena<bounded_malloc_resource> arena;
  auto* first = static_cast<char*>(arena.allocate(16));
  std::size_t left = arena.bytes_left_in_chunk();
  EXPECT_THROW((void)arena.allocate(SIZE_MAX, 1), std::bad_alloc);
  EXPECT_THROW((void)arena.allocate(SIZE_MAX / 2, 16), std::bad_alloc);
  EXPECT_THROW((void)arena.allocate(16, huge_alignment), std::bad_alloc);
  EXPECT_THROW((void)arena.allocate(huge_alignment, huge_alignment), std::bad_alloc);
  expect_cursor_kept(arena, first + 16, left);
}

TEST(ArenaBadInput, LargeAlignmentsAreHonoured) {
  monotonic_arena<> arena;
  for (std::size_t alignment = 1; alignment <= (std::size_t{1} << 20); alignment <<= 1) {
    void* p = arena.allocate(3, alignment);
    EXPECT_TRUE(aligned(p, alignment)) << alignment;
    void* q = arena.try_allocate(3, alignment);
    if (q != nullptr) {
      EXPECT_TRUE(aligned(q, alignment)) << alignment;
    }
  }
}

TEST(ArenaBadInput, BatchWhoseStrideWrapsThrowsAndWritesNothing) {
  monotonic_arena<> arena;
  void* out[2] = {nullptr, nullptr};
  EXPECT_THROW(arena.allocate_batch(SIZE_MAX - 3, 2, out, 16), std::bad_array_new_length);
  EXPECT_THROW(arena.allocate_batch(SIZE_MAX, 1, out), std::bad_array_new_length);
  EXPECT_THROW(arena.allocate_batch(16, 2, out, 0), std::invalid_argument);
  EXPECT_EQ(out[0], nullptr);
  EXPECT_EQ(out[1], nullptr);
  arena.allocate_batch(0, 2, out);
  EXPECT_NE(out[0], out[1]);
  EXPECT_EQ(arena.stats().allocations, 2u);
}

}  // namespace
