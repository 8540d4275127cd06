// Frame allocator on one thread: frames, double buffering, pools, tags, report.
#include <strata/frame.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <memory_resource>
#include <set>
#include <thread>
#include <vector>

#include "counting_resource.hpp"

namespace {

strata::frame_options small_frames(bool double_buffered = false) {
  strata::frame_options options;
  options.arena.growth = {4096, 2, 1 << 20};
  options.double_buffered = double_buffered;
  return options;
}

TEST(Frame, EndFrameFreesTheFrameAndLaterFramesReuseItsChunks) {
  strata::test::upstream_counts counts;
  strata::frame_allocator<strata::test::counting_resource> frames(
      small_frames(), strata::test::counting_resource(counts));
  std::size_t calls_after_first_frame = 0;
  for (int frame = 0; frame < 10; ++frame) {
    frames.begin_frame();
    for (int i = 0; i < 1000; ++i) std::memset(frames.allocate(100), 1, 100);  // past 4 KiB
    frames.end_frame();
    if (frame == 0) calls_after_first_frame = counts.allocations;
  }
  EXPECT_EQ(counts.allocations, calls_after_first_frame);
  EXPECT_GE(frames.report().threads.at(0).reserved_bytes, 100000u);
  EXPECT_EQ(frames.report().threads.at(0).frames, 10u);
}

TEST(Frame, DoubleBufferedDataLivesUntilTheNextFrameEnds) {
  strata::frame_allocator<> frames(small_frames(true));
  frames.begin_frame();
  auto* previous = static_cast<unsigned char*>(frames.allocate(64));
  std::memset(previous, 0xab, 64);
  frames.end_frame();
  frames.begin_frame();
  std::set<void*> frame_two;
  for (int i = 0; i < 100; ++i) {
    void* p = frames.allocate(64);
    std::memset(p, 0xcd, 64);
    frame_two.insert(p);
  }
  EXPECT_EQ(frame_two.count(previous), 0u);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(previous[i], 0xab);  // still intact
  frames.end_frame();
  frames.begin_frame();
  EXPECT_EQ(frames.allocate(64), previous);  // frame one's arena was reset, reused now
  frames.end_frame();
}

// The thread's cache of its last allocator holds the active arena; taking turns
// with another allocator must not bring back an arena a flip has retired.
TEST(Frame, DoubleBufferedAllocatorsTakingTurnsKeepTheirFrames) {
  strata::frame_allocator<> first(small_frames(true));
  strata::frame_allocator<> second(small_frames(true));
  first.begin_frame();
  auto* kept = static_cast<unsigned char*>(first.allocate(64));
  std::memset(kept, 0xab, 64);
  first.end_frame();
  second.begin_frame();
  (void)second.allocate(64);
  second.end_frame();
  first.begin_frame();
  std::vector<unsigned char*> frame_two;
  for (int i = 0; i < 100; ++i) {
    frame_two.push_back(static_cast<unsigned char*>(first.allocate(64)));
    ASSERT_NE(frame_two.back(), kept);
    std::memset(frame_two.back(), 0xcd, 64);
  }
  for (int i = 0; i < 64; ++i) ASSERT_EQ(kept[i], 0xab);
  first.end_frame();
  first.begin_frame();  // frame two's blocks live on through frame three
  for (int i = 0; i < 100; ++i) std::memset(first.allocate(64), 0xee, 64);
  for (unsigned char* block : frame_two)
    for (int i = 0; i < 64; ++i) ASSERT_EQ(block[i], 0xcd);
  first.end_frame();
}

TEST(Frame, ThisThreadArenaIsTheFramesArena) {
  strata::frame_allocator<> frames(small_frames(true));
  frames.begin_frame();
  auto& arena = frames.this_thread_arena();
  void* p = arena.allocate(64);
  std::memset(p, 1, 64);
  frames.end_frame();
  frames.begin_frame();
  EXPECT_NE(&frames.this_thread_arena(), &arena);  // double buffered: the other arena
  frames.end_frame();
  frames.begin_frame();
  EXPECT_EQ(&frames.this_thread_arena(), &arena);
  EXPECT_EQ(arena.allocate(64), p);
  frames.end_frame();
}

TEST(Frame, BatchAndArraysAreSeparateAlignedBlocks) {
  strata::frame_allocator<> frames(small_frames());
  std::vector<void*> blocks(1000);
  frames.allocate_batch(64, blocks.size(), blocks.data(), 64);
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), blocks.size());
  for (void* p : blocks) ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  std::span<double> doubles = frames.allocate_array<double>(100);
  EXPECT_EQ(doubles.size(), 100u);
  EXPECT_THROW((void)frames.allocate_array<double>(SIZE_MAX / 2), std::bad_array_new_length);
  EXPECT_THROW((void)frames.allocate(8, 12), std::invalid_argument);
  frames.end_frame();
}

TEST(Frame, PoolBlocksOutliveFramesAndAreReused) {
  strata::frame_allocator<> frames(small_frames());
  frames.begin_frame();
  auto* kept = static_cast<unsigned char*>(frames.pool_allocate(48));
  std::memset(kept, 0x11, 48);
  void* freed = frames.pool_allocate(48);
  frames.pool_deallocate(freed);
  frames.end_frame();
  frames.begin_frame();
  for (int i = 0; i < 1000; ++i) (void)frames.allocate(64);
  for (int i = 0; i < 48; ++i) ASSERT_EQ(kept[i], 0x11);
  EXPECT_EQ(frames.pool_allocate(40), freed);  // same size class, LIFO reuse
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(frames.pool_allocate(256)) % 64, 0u);
  EXPECT_THROW((void)frames.pool_allocate(257), std::bad_alloc);
  frames.end_frame();
}

TEST(Frame, CrossThreadPoolFreeWaitsForTheOwnersNextFrame) {
  strata::frame_allocator<> frames(small_frames());
  frames.begin_frame();
  void* block = frames.pool_allocate(32);
  std::thread([&] { frames.pool_deallocate(block); }).join();
  void* before = frames.pool_allocate(32);
  EXPECT_NE(before, block);  // not back yet
  frames.end_frame();
  frames.begin_frame();
  EXPECT_EQ(frames.pool_allocate(32), block);
  frames.end_frame();
}

TEST(Frame, TagsAttributeBytesAndCountBudgetOverruns) {
  strata::frame_allocator<> frames(small_frames());
  strata::frame_tag physics = frames.register_tag("physics", 1000);
  strata::frame_tag ui = frames.register_tag("ui");
  for (int frame = 0; frame < 3; ++frame) {
    frames.begin_frame();
    (void)frames.allocate(frame == 1 ? 2000 : 500, 16, physics);
    (void)frames.allocate(100, 16, ui);
    (void)frames.allocate(7);
    frames.end_frame();
  }
  strata::frame_report r = frames.report();
  ASSERT_EQ(r.tags.size(), 3u);
  EXPECT_EQ(r.tags[physics].name, "physics");
  EXPECT_EQ(r.tags[physics].last_frame_bytes, 500u);
  EXPECT_EQ(r.tags[physics].peak_frame_bytes, 2000u);
  EXPECT_EQ(r.tags[physics].frames_over_budget, 1u);
  EXPECT_EQ(r.tags[ui].frames_over_budget, 0u);
  EXPECT_EQ(r.tags[strata::untagged].last_frame_bytes, 7u);
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].frames, 3u);
  EXPECT_EQ(r.threads[0].last_frame_bytes, 607u);
  EXPECT_EQ(r.threads[0].peak_frame_bytes, 2107u);
  EXPECT_THROW((void)frames.allocate(8, 8, 64), std::invalid_argument);
}

// Untagged bytes are counted in the thread's cache of its last allocator; one
// that hands the cache to another mid-frame keeps its count.
TEST(Frame, AllocatorsTakingTurnsInOneFrameKeepTheirOwnCounts) {
  strata::frame_allocator<> first(small_frames());
  strata::frame_allocator<> second(small_frames());
  strata::frame_tag tagged = second.register_tag("tagged");
  for (int frame = 0; frame < 2; ++frame) {
    first.begin_frame();
    second.begin_frame();
    (void)first.allocate(10);
    (void)second.allocate(20);
    (void)first.allocate(30);
    (void)second.allocate(5, 16, tagged);
    (void)second.allocate(40);
    second.end_frame();
    (void)first.allocate(50);
    first.end_frame();
  }
  EXPECT_EQ(first.report().tags[strata::untagged].last_frame_bytes, 90u);
  EXPECT_EQ(first.report().threads.at(0).peak_frame_bytes, 90u);
  EXPECT_EQ(second.report().tags[strata::untagged].last_frame_bytes, 60u);
  EXPECT_EQ(second.report().tags[tagged].last_frame_bytes, 5u);
  EXPECT_EQ(second.report().threads.at(0).last_frame_bytes, 65u);
}

TEST(Frame, MinimalModeStillAllocates) {
  strata::frame_allocator<strata::malloc_resource, strata::frame_config{.statistics = false}>
      frames;
  frames.begin_frame();
  EXPECT_NE(frames.allocate(64), nullptr);
  frames.end_frame();
  EXPECT_EQ(frames.report().threads.at(0).last_frame_bytes, 0u);
}

TEST(Frame, ServesPmrContainers) {
  strata::frame_allocator<> frames(small_frames());
  strata::resource_ref resource(frames);
  frames.begin_frame();
  {
    std::pmr::vector<int> v(&resource);
    for (int i = 0; i < 10000; ++i) v.push_back(i);
    EXPECT_EQ(v[9999], 9999);
  }
  frames.end_frame();
}

using FrameDeathTest = testing::Test;

TEST(FrameDeathTest, PoolFreeIntoAnotherAllocatorAborts) {
  strata::frame_allocator<> one(small_frames());
  strata::frame_allocator<> two(small_frames());
  void* p = one.pool_allocate(32);
  EXPECT_DEATH(two.pool_deallocate(p),
               "strata: block freed into the wrong frame allocator in "
               "frame_allocator::pool_deallocate");
  one.pool_deallocate(p);
}

}  // namespace
