// Frees from other threads across many size classes: the blocks wait in the
// freeing thread's array and go back to their pages in batches, so these check
// that every block reaches its owner, live blocks stay intact, and the counts add up.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "strata/strata.h"

namespace {

// Sizes over list pages (16 B to under 4 KiB) and map pages (4 KiB and up),
// several per power of two so that many classes are in flight at once.
std::vector<std::size_t> many_sizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t size = 16; size <= 40000; size += size / 4 + 8) sizes.push_back(size);
  return sizes;
}

// A block and the byte its contents repeat.
struct filled {
  void* p;
  std::size_t size;
  unsigned char fill;
};

bool intact(const filled& f) {
  const auto* bytes = static_cast<const unsigned char*>(f.p);
  for (std::size_t i = 0; i < f.size; ++i)
    if (bytes[i] != f.fill) return false;
  return true;
}

// Counts the live blocks a heap visit reports.
int count_block(void*, std::size_t, void* arg) {
  ++*static_cast<std::size_t*>(arg);
  return 1;
}

std::size_t live_blocks(strata_heap_t* heap) {
  std::size_t n = 0;
  strata_heap_visit(heap, count_block, &n);
  return n;
}

}  // namespace

// A heap's blocks of many classes, every other one freed by another thread
// (more than its array holds, so it posts both when full and at exit): the
// heap then holds exactly the rest, untouched, and every block comes back.
TEST(HeapRemoteFree, ManyClassesComeBackToTheirOwner) {
  strata_heap_t* heap = strata_heap_new();
  ASSERT_NE(heap, nullptr);
  std::vector<filled> kept, sent;
  unsigned char fill = 1;
  for (int round = 0; round < 40; ++round) {
    for (std::size_t size : many_sizes()) {
      void* p = strata_heap_malloc(heap, size);
      ASSERT_NE(p, nullptr);
      std::memset(p, fill, size);
      ((kept.size() + sent.size()) % 2 == 0 ? kept : sent).push_back({p, size, fill});
      fill = static_cast<unsigned char>(fill % 251 + 1);
    }
  }
  strata_stats_t before;
  strata_stats_get(&before);
  std::thread([&sent] {
    for (const filled& f : sent) strata_free(f.p);
  }).join();
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.cross_thread_frees - before.cross_thread_frees, sent.size());

  EXPECT_EQ(live_blocks(heap), kept.size());
  for (const filled& f : kept) ASSERT_TRUE(intact(f)) << f.size << "-byte block changed";
  // The freed blocks serve the heap again: allocating them all anew finds no
  // block the heap still counts as live.
  for (const filled& f : sent) {
    void* p = strata_heap_malloc(heap, f.size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xee, f.size);
  }
  for (const filled& f : kept) ASSERT_TRUE(intact(f)) << f.size << "-byte block changed";
  EXPECT_EQ(live_blocks(heap), kept.size() + sent.size());
  strata_heap_destroy(heap);
}

// A producer allocating spread sizes and a consumer freeing them as they come,
// the consumer never allocating: its frees reach the producer when its array
// fills and when it exits, and the producer reuses them instead of growing.
TEST(HeapRemoteFree, ProducerConsumerRecyclesBlocks) {
  constexpr int messages = 200000;
  constexpr std::size_t ring = 1024;
  std::vector<std::atomic<void*>> slots(ring);
  std::atomic<int> produced{0}, consumed{0};
  int damaged = 0;  // the consumer's count of blocks that did not hold their message
  std::unordered_set<void*> addresses;
  std::thread consumer([&] {
    for (int i = 0; i < messages; ++i) {
      while (consumed.load(std::memory_order_relaxed) == produced.load(std::memory_order_acquire))
        std::this_thread::yield();
      void* p = slots[i % ring].load(std::memory_order_relaxed);
      if (*static_cast<unsigned char*>(p) != static_cast<unsigned char>(i)) ++damaged;
      strata_free(p);
      consumed.store(i + 1, std::memory_order_release);
    }
  });
  strata_stats_t start;
  strata_stats_get(&start);
  std::uint32_t random = 21;
  for (int i = 0; i < messages; ++i) {
    while (produced.load(std::memory_order_relaxed) - consumed.load(std::memory_order_acquire) ==
           static_cast<int>(ring))
      std::this_thread::yield();
    random = random * 1664525 + 1013904223;
    std::size_t size = 64 + (random >> 8) % 961;
    auto* p = static_cast<unsigned char*>(strata_malloc(size));
    ASSERT_NE(p, nullptr);
    std::memset(p, static_cast<unsigned char>(i), size);
    addresses.insert(p);
    slots[i % ring].store(p, std::memory_order_relaxed);
    produced.store(i + 1, std::memory_order_release);
  }
  consumer.join();
  strata_stats_t end;
  strata_stats_get(&end);
  EXPECT_EQ(end.cross_thread_frees - start.cross_thread_frees, std::uint64_t{messages});
  EXPECT_EQ(end.frees - start.frees, end.mallocs - start.mallocs);
  EXPECT_EQ(damaged, 0);
  // At most the ring and the consumer's array are out at once: the producer
  // gets the same blocks back again and again rather than carving new ones.
  EXPECT_LT(addresses.size(), std::size_t{messages / 10}) << "distinct blocks";
}

// Aligned pointers inside blocks (4,103 bytes at 32 come from a class of 4,368,
// not a multiple of 32), freed by another thread, go back as their blocks.
TEST(HeapRemoteFree, AlignedPointersComeBackAsTheirBlocks) {
  strata_heap_t* heap = strata_heap_new();
  ASSERT_NE(heap, nullptr);
  std::vector<void*> blocks;
  for (int i = 0; i < 200; ++i) {
    void* p = strata_heap_malloc_aligned(heap, 4103, 32);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 32, 0u);
    std::memset(p, 0x5a, 4103);
    blocks.push_back(p);
  }
  std::thread([&blocks] {
    for (void* p : blocks) strata_free(p);
  }).join();
  EXPECT_EQ(live_blocks(heap), 0u);
  strata_heap_destroy(heap);
}
