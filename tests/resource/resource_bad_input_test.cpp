// The upstream resources and resource_ref on bad input: an alignment that is
// no power of two throws std::invalid_argument, a size nothing can hold
// std::bad_alloc, whichever face (direct, resource_ref, std::pmr) is used.
#include <strata/arena.hpp>
#include <strata/resource.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory_resource>
#include <new>
#include <stdexcept>

namespace {

constexpr std::size_t huge_alignment = std::size_t{1} << 63;
constexpr std::size_t bad_alignments[] = {0, 3, 24, SIZE_MAX};

TEST(ResourceBadInput, BadAlignmentsThrowInvalidArgument) {
  strata::malloc_resource m;
  strata::new_delete_resource n;
  strata::heap_resource h;
  strata::resource_ref ref(h);
  for (std::size_t alignment : bad_alignments) {
    EXPECT_THROW((void)m.allocate(16, alignment), std::invalid_argument) << alignment;
    EXPECT_THROW((void)n.allocate(16, alignment), std::invalid_argument) << alignment;
    EXPECT_THROW((void)h.allocate(16, alignment), std::invalid_argument) << alignment;
    EXPECT_THROW((void)ref.allocate(16, alignment), std::invalid_argument) << alignment;
  }
}

TEST(ResourceBadInput, MallocSizeThatRoundsPastTheTopThrowsBadAlloc) {
  strata::malloc_resource m;
  EXPECT_THROW((void)m.allocate(SIZE_MAX - 10, 64), std::bad_alloc);
  EXPECT_THROW((void)m.allocate(SIZE_MAX, 16), std::bad_alloc);
  EXPECT_THROW((void)m.allocate(SIZE_MAX - 4000, 4096), std::bad_alloc);
}

TEST(ResourceBadInput, HeapImpossibleSizesAndAlignmentsThrowBadAlloc) {
  strata::heap_resource h;
  strata::resource_ref ref(h);
  EXPECT_THROW((void)h.allocate(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW((void)h.allocate(SIZE_MAX - 10, 64), std::bad_alloc);
  EXPECT_THROW((void)h.allocate(16, huge_alignment), std::bad_alloc);
  EXPECT_THROW((void)ref.allocate(SIZE_MAX / 2, 16), std::bad_alloc);
  void* zero = ref.allocate(0, 1);
  EXPECT_NE(zero, nullptr);
  ref.deallocate(zero, 0, 1);
}

TEST(ResourceBadInput, ResourceRefPassesTheArenasAnswersThrough) {
  strata::monotonic_arena<strata::heap_resource> arena;
  strata::resource_ref ref(arena);
  std::pmr::memory_resource& pmr = ref;
  for (std::size_t alignment : bad_alignments)
    EXPECT_THROW((void)pmr.allocate(16, alignment), std::invalid_argument) << alignment;
  // Through a variable: at -O0 (the ASan tree's test code) GCC rejects the
  // constant as larger than any object (-Walloc-size-larger-than).
  std::size_t impossible = SIZE_MAX;
  EXPECT_THROW((void)pmr.allocate(impossible, 16), std::bad_alloc);
  void* p = pmr.allocate(0, 1);
  EXPECT_NE(p, nullptr);
  pmr.deallocate(p, 0, 1);
}

}  // namespace
