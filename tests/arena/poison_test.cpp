// AddressSanitizer sees memory the arena, the frame allocator and the session
// heap have taken back: a read of it dies with use-after-poison. Skipped in
// builds without AddressSanitizer.
#include <strata/frame.hpp>
#include <strata/session_heap.hpp>

#include <gtest/gtest.h>

namespace {

#ifdef STRATA_HAS_ASAN
constexpr bool asan = true;
#else
constexpr bool asan = false;
#endif

// Reads through a pointer the optimiser cannot see through.
unsigned char read_byte(const void* p) {
  return *static_cast<const volatile unsigned char*>(p);
}

using PoisonDeathTest = testing::Test;

TEST(PoisonDeathTest, ArenaMemoryAfterResetIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::monotonic_arena<> arena;
  void* p = arena.allocate(64);
  (void)read_byte(p);
  arena.reset(strata::retention::keep_everything);
  EXPECT_DEATH((void)read_byte(p), "use-after-poison");
}

TEST(PoisonDeathTest, FrameMemoryAfterEndFrameIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::frame_allocator<> frames;
  frames.begin_frame();
  void* p = frames.allocate(64);
  (void)read_byte(p);
  frames.end_frame();
  EXPECT_DEATH((void)read_byte(p), "use-after-poison");
}

TEST(PoisonDeathTest, FramePoolBlockAfterFreeIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::frame_allocator<> frames;
  auto* p = static_cast<char*>(frames.pool_allocate(64));
  (void)frames.pool_allocate(64);
  frames.pool_deallocate(p);
  EXPECT_DEATH((void)read_byte(p + 32), "use-after-poison");
}

TEST(PoisonDeathTest, SessionBufferAfterRewindIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::session_heap session(4096);
  void* p = session.allocate(64);
  (void)read_byte(p);
  session.rewind_buffer();
  EXPECT_DEATH((void)read_byte(p), "use-after-poison");
}

TEST(PoisonDeathTest, SessionBufferBlockAfterDeallocateIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::session_heap session(4096);
  auto* p = static_cast<char*>(session.allocate(64));
  void* next = session.allocate(64);
  session.deallocate(p, 64);
  EXPECT_DEATH((void)read_byte(p + 8), "use-after-poison");
  (void)read_byte(next);
}

}  // namespace
