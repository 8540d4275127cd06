// First-class heaps: allocate, visit, destroy (everything at once), delete (blocks migrate).
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/strata.h"

namespace {
int collect_blocks(void* block, size_t size, void* arg) {
  (*static_cast<std::map<void*, size_t>*>(arg))[block] = size;
  return 1;
}
}  // namespace

TEST(FirstClassHeap, VisitReportsExactlyTheLiveBlocks) {
  strata_heap_t* h = strata_heap_new();
  std::vector<void*> live;
  for (int i = 0; i < 3000; ++i) {
    void* p = strata_heap_malloc(h, 16 + (i * 53) % 5000);
    if (i % 3 == 0)
      strata_free(p);
    else
      live.push_back(p);
  }
  live.push_back(strata_heap_malloc(h, 20 << 20));
  std::map<void*, size_t> seen;
  strata_heap_visit(h, collect_blocks, &seen);
  EXPECT_EQ(seen.size(), live.size());
  for (void* p : live) {
    ASSERT_TRUE(seen.count(p));
    EXPECT_GE(seen[p], strata_usable_size(p));
  }
  strata_heap_destroy(h);
}

TEST(FirstClassHeap, DestroyFreesEverythingAtOnce) {
  strata_stats_t before;
  strata_stats_get(&before);
  strata_heap_t* h = strata_heap_new();
  for (int i = 0; i < 10000; ++i) std::memset(strata_heap_malloc(h, 100 + i % 700), 1, 100);
  std::memset(strata_heap_calloc(h, 1000, 1000), 2, 1000);
  EXPECT_NE(strata_heap_malloc(h, 30 << 20), nullptr);
  strata_heap_destroy(h);
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.pages, before.pages);
}

TEST(FirstClassHeap, DeleteMovesLiveBlocksToTheDefaultHeap) {
  strata_heap_t* h = strata_heap_new();
  std::vector<char*> blocks;
  for (int i = 0; i < 500; ++i) {
    auto* p = static_cast<char*>(strata_heap_malloc(h, 64 + i));
    std::memset(p, i, 64 + i);
    blocks.push_back(p);
  }
  strata_heap_delete(h);
  std::map<void*, size_t> seen;
  strata_heap_visit(strata_heap_default(), collect_blocks, &seen);
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(seen.count(blocks[i]));
    EXPECT_EQ(blocks[i][63 + i], static_cast<char>(i));
    strata_free(blocks[i]);
  }
}

TEST(FirstClassHeap, BlocksFreedFromAnotherThreadBeforeDestroy) {
  strata_heap_t* h = strata_heap_new();
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) blocks.push_back(strata_heap_malloc(h, 256));
  std::thread([&] {
    for (std::size_t i = 0; i < blocks.size(); i += 2) strata_free(blocks[i]);
    strata_collect(0);  // flushes this thread's batched frees before the heap goes
  }).join();
  void* p = strata_heap_realloc(h, blocks[1], 5000);
  ASSERT_NE(p, nullptr);
  void* q = strata_heap_malloc_aligned(h, 300, 256);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 256, 0u);
  strata_heap_destroy(h);
}
