// Session heap: bump over its buffer, overflow into its heap, destroy, isolation.
#include <strata/session_heap.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory_resource>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

TEST(SessionHeap, BumpsInTheBufferAndFreeThereIsANoOp) {
  strata::session_heap session(64 * 1024);
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 100; ++i) {
    auto* p = static_cast<unsigned char*>(session.allocate(256, 64));
    ASSERT_TRUE(session.in_buffer(p));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
    std::memset(p, i, 256);
    blocks.push_back(p);
  }
  session.deallocate(blocks[5], 256, 64);
  EXPECT_EQ(session.overflow_allocations(), 0u);
  for (int i = 0; i < 100; ++i) {
    if (i == 5) continue;  // the freed block's bytes are dead
    ASSERT_EQ(blocks[i][255], i);
  }
}

TEST(SessionHeap, OverflowFallsBackToTheHeapAndFreesIndividually) {
  strata::session_heap session(8 * 1024);
  std::vector<std::pair<unsigned char*, unsigned char>> live;
  for (int i = 0; i < 2000; ++i) {
    auto* p = static_cast<unsigned char*>(session.allocate(256));
    std::memset(p, i & 0xff, 256);
    live.emplace_back(p, static_cast<unsigned char>(i));
  }
  EXPECT_GT(session.overflow_allocations(), 1900u);
  std::size_t from_heap = 0;
  for (auto& [p, fill] : live) {
    ASSERT_EQ(p[0], fill);
    ASSERT_EQ(p[255], fill);
    if (!session.in_buffer(p)) {
      ++from_heap;
      ASSERT_GE(strata_usable_size(p), 256u);
    }
  }
  EXPECT_EQ(from_heap, session.overflow_allocations());
  std::set<unsigned char*> distinct;
  for (auto& [p, fill] : live) ASSERT_TRUE(distinct.insert(p).second);
  for (std::size_t i = 0; i < live.size(); i += 2) session.deallocate(live[i].first, 256);
  for (std::size_t i = 1; i < live.size(); i += 2) ASSERT_EQ(live[i].first[100], live[i].second);
  // A large request goes to the heap too, never std::bad_alloc.
  void* big = session.allocate(32 << 20);
  std::memset(big, 0, 32 << 20);
  session.deallocate(big, 32 << 20);
}

TEST(SessionHeap, RewindBufferReusesItForTheNextBurst) {
  strata::session_heap session(64 * 1024);
  void* first = session.allocate(256);
  for (int i = 0; i < 1000; ++i) (void)session.allocate(256);  // some overflow
  void* overflow = session.allocate(256);
  std::memset(overflow, 3, 256);
  session.rewind_buffer();
  EXPECT_EQ(session.allocate(256), first);
  EXPECT_EQ(static_cast<unsigned char*>(overflow)[255], 3);
  session.deallocate(overflow, 256);
}

TEST(SessionHeap, BadAlignmentThrows) {
  strata::session_heap session;
  EXPECT_THROW((void)session.allocate(64, 48), std::invalid_argument);
}

TEST(SessionHeap, ServesPmrContainers) {
  strata::session_heap session(16 * 1024);
  std::pmr::map<int, std::pmr::string> orders(&session);
  for (int i = 0; i < 2000; ++i)
    orders.emplace(i, std::string(64, static_cast<char>('A' + i % 26)));
  EXPECT_EQ(orders.at(1999)[0], 'A' + 1999 % 26);
  orders.clear();
  EXPECT_GT(session.overflow_allocations(), 0u);
}

TEST(SessionHeap, DestroyFreesEverythingAndIsolatesSessions) {
  strata::session_heap keep(16 * 1024);
  strata::session_heap drop(16 * 1024);
  std::mt19937 rng(3);
  std::vector<unsigned char*> kept;
  for (int i = 0; i < 3000; ++i) {
    std::size_t bytes = 16 + rng() % 2000;
    auto* k = static_cast<unsigned char*>(keep.allocate(bytes));
    std::memset(k, 0x77, bytes);
    kept.push_back(k);
    std::memset(drop.allocate(bytes), 0x99, bytes);
  }
  drop.destroy();
  EXPECT_TRUE(drop.destroyed());
  for (unsigned char* k : kept) ASSERT_EQ(*k, 0x77);
  // The heap's memory may now serve a new session without disturbing `keep`.
  strata::session_heap next(16 * 1024);
  for (int i = 0; i < 3000; ++i) std::memset(next.allocate(500), 0x55, 500);
  for (unsigned char* k : kept) ASSERT_EQ(*k, 0x77);
}

using SessionHeapDeathTest = testing::Test;

TEST(SessionHeapDeathTest, UseAfterDestroyAborts) {
  EXPECT_DEATH(
      {
        strata::session_heap session(4096);
        session.destroy();
        (void)session.allocate(64);
      },
      "strata: use of a destroyed session_heap in session_heap::allocate");
  EXPECT_DEATH(
      {
        strata::session_heap session(4096);
        void* p = session.allocate(64);
        session.destroy();
        session.deallocate(p, 64);
      },
      "strata: use of a destroyed session_heap in session_heap::deallocate");
  EXPECT_DEATH(
      {
        strata::session_heap session(4096);
        session.destroy();
        session.destroy();
      },
      "strata: use of a destroyed session_heap in session_heap::destroy");
}

// Bumps from the buffer are checked too, not only overflow blocks: two threads
// bumping one buffer would get overlapping blocks.
TEST(SessionHeapDeathTest, AllocationFromAnotherThreadAborts) {
  EXPECT_DEATH(
      {
        strata::session_heap session(4096);
        std::thread([&] {
          for (int i = 0; i < 100; ++i) (void)session.allocate(256);
        }).join();
      },
      "strata: session_heap used from a thread that does not own it in session_heap::allocate");
  EXPECT_DEATH(
      {
        strata::session_heap session(1 << 20);
        std::thread([&] { (void)session.allocate(64); }).join();
      },
      "strata: session_heap used from a thread that does not own it in session_heap::allocate");
}

}  // namespace
