// The session heap on bad input: bad alignments throw, impossible sizes throw
// std::bad_alloc, and neither touches the buffer; frees of buffer blocks are
// no-ops whatever the pointer, frees of anything else are the heap's to judge.
#include <strata/session_heap.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace {

constexpr std::size_t huge_alignment = std::size_t{1} << 63;

TEST(SessionHeapBadInput, BadAlignmentThrowsAndKeepsTheBuffer) {
  strata::session_heap session(4096);
  auto* first = static_cast<char*>(session.allocate(16, 16));
  std::size_t left = session.buffer_bytes_left();
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{48}, SIZE_MAX})
    EXPECT_THROW((void)session.allocate(16, alignment), std::invalid_argument) << alignment;
  EXPECT_EQ(session.buffer_bytes_left(), left);
  EXPECT_EQ(session.allocate(16, 16), first + 16);
}

TEST(SessionHeapBadInput, ImpossibleSizesAndAlignmentsThrowBadAlloc) {
  strata::session_heap session(4096);
  auto* first = static_cast<char*>(session.allocate(16, 16));
  std::size_t left = session.buffer_bytes_left();
  EXPECT_THROW((void)session.allocate(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW((void)session.allocate(SIZE_MAX - 8, 16), std::bad_alloc);
  EXPECT_THROW((void)session.allocate(SIZE_MAX / 2, 64), std::bad_alloc);
  EXPECT_THROW((void)session.allocate(16, huge_alignment), std::bad_alloc);
  EXPECT_THROW((void)session.allocate(16, std::size_t{1} << 40), std::bad_alloc);
  EXPECT_EQ(session.overflow_allocations(), 0u);
  EXPECT_EQ(session.buffer_bytes_left(), left);
  EXPECT_EQ(session.allocate(16, 16), first + 16);
}

TEST(SessionHeapBadInput, ZeroBytesGivesDistinctBlocksInAndOutOfTheBuffer) {
  strata::session_heap session(4096);
  void* a = session.allocate(0);
  void* b = session.allocate(0);
  EXPECT_NE(a, b);
  (void)session.allocate(session.buffer_bytes_left(), 1);
  void* c = session.allocate(0);
  void* d = session.allocate(0);
  EXPECT_NE(c, d);
  EXPECT_FALSE(session.in_buffer(c));
  session.deallocate(c, 0);
  session.deallocate(d);
}

TEST(SessionHeapBadInput, FreesInsideTheBufferAreNoOps) {
  strata::session_heap session(4096);
  auto* p = static_cast<char*>(session.allocate(64));
  session.deallocate(p + 8, 64);  // interior
  session.deallocate(p, 64);
  session.deallocate(p, 64);  // twice
  EXPECT_EQ(session.allocate(16, 16), p + 64);
}

using SessionHeapBadInputDeathTest = testing::Test;

// Outside the buffer, a free is the heap's: it names a foreign pointer, an
// interior one and a double free.
TEST(SessionHeapBadInputDeathTest, BadFreesOutsideTheBufferAreTheHeapsToReport) {
  strata::session_heap session(4096);
  auto* overflow = static_cast<char*>(session.allocate(8192));
  ASSERT_FALSE(session.in_buffer(overflow));
  void* foreign = std::malloc(64);
  EXPECT_DEATH(session.deallocate(foreign, 64),
               "strata: heap corruption: free of a pointer strata did not allocate");
  std::free(foreign);
  EXPECT_DEATH(session.deallocate(overflow + 16, 8192),
               "strata: heap corruption: free of a pointer strata did not hand out");
  session.deallocate(overflow, 8192);
  EXPECT_DEATH(session.deallocate(overflow, 8192), "strata: heap corruption: double free");
}

}  // namespace
