// buddy against a shadow model: random allocate/free sequences keep every
// block's bytes, never overlap, give power-of-two blocks aligned to their
// size; the statistics add up after every step, and freeing everything
// merges the region back into one block. Over a PROT_NONE region the same
// workload runs: buddy never touches the memory it manages.
#include <strata/buddy.hpp>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <new>
#include <random>

namespace {

using strata::buddy;
using strata::buddy_config;

struct live {
  std::size_t bytes;
  std::size_t block;
  unsigned char pattern;
};

// The power of two a request of `bytes` at `alignment` gets.
std::size_t block_size(std::size_t bytes, std::size_t alignment, std::size_t min_block) {
  std::size_t size = min_block;
  while (size < bytes || size < alignment) size *= 2;
  return size;
}

TEST(Buddy, RandomSequenceAgainstShadow) {
  buddy_config config{.total_bytes = 8 << 20, .min_block = 32};
  buddy<> pool(config);
  std::mt19937_64 rng(99);
  std::map<std::uintptr_t, live> blocks;
  std::size_t in_use = 0;
  for (int step = 0; step < 30000; ++step) {
    if (!blocks.empty() && (rng() % 2 == 0 || blocks.size() > 500)) {
      auto it = std::next(blocks.begin(), static_cast<long>(rng() % blocks.size()));
      auto* p = reinterpret_cast<unsigned char*>(it->first);
      for (std::size_t k = 0; k < it->second.bytes; ++k)
        ASSERT_EQ(p[k], it->second.pattern) << "block contents changed";
      pool.deallocate(p, it->second.bytes);
      in_use -= it->second.block;
      blocks.erase(it);
    } else {
      std::size_t bytes = rng() % 4 == 0 ? rng() % 100000 : rng() % 500;
      std::size_t alignment = std::size_t{1} << (rng() % 12);
      void* raw;
      try {
        raw = pool.allocate(bytes, alignment);
      } catch (const std::bad_alloc&) {
        continue;  // full: the shadow stays as it is
      }
      auto* p = static_cast<unsigned char*>(raw);
      auto address = reinterpret_cast<std::uintptr_t>(p);
      std::size_t size = block_size(bytes, alignment, 32);
      ASSERT_EQ((address - pool.base()) % size, 0u) << "a block sits at a multiple of its size";
      ASSERT_EQ(address % alignment, 0u);
      auto next = blocks.lower_bound(address);
      if (next != blocks.end()) {
        ASSERT_GE(next->first, address + size);
      }
      if (next != blocks.begin()) {
        auto before = std::prev(next);
        ASSERT_LE(before->first + std::max<std::size_t>(before->second.bytes, 1), address);
      }
      auto pattern = static_cast<unsigned char>(step);
      std::memset(p, pattern, bytes);
      blocks[address] = {bytes, size, pattern};
      in_use += size;
    }
    strata::buddy_statistics s = pool.statistics();
    ASSERT_EQ(s.bytes_in_use, in_use);
    ASSERT_EQ(s.bytes_in_use + s.bytes_free, s.bytes_reserved);
    ASSERT_EQ(s.blocks_in_use, blocks.size());
  }
  for (auto& [address, block] : blocks)
    pool.deallocate(reinterpret_cast<void*>(address), block.bytes);
  strata::buddy_statistics s = pool.statistics();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.largest_free, 8u << 20) << "everything merged back into one block";
  EXPECT_EQ(pool.free_blocks(0), 0u);
  EXPECT_DOUBLE_EQ(s.fragmentation(), 0.0);
}

// Splitting gives the lowest block; freeing both halves merges them.
TEST(Buddy, SplitsAndMerges) {
  buddy<> pool(buddy_config{.total_bytes = 1 << 20, .min_block = 64});
  void* a = pool.allocate(64);
  void* b = pool.allocate(64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a), pool.base());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b), pool.base() + 64);
  void* c = pool.allocate(3000);  // a 4 KiB block
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c), pool.base() + 4096);
  EXPECT_EQ(pool.statistics().largest_free, 512u * 1024);
  EXPECT_NEAR(pool.statistics().fragmentation(),
              1.0 - 512.0 * 1024 / static_cast<double>((1 << 20) - 128 - 4096), 1e-12);
  pool.deallocate(a, 64);
  EXPECT_EQ(pool.free_blocks(0), 1u);
  pool.deallocate(b, 64);
  EXPECT_EQ(pool.free_blocks(0), 0u);
  pool.deallocate(c, 3000);
  EXPECT_EQ(pool.statistics().largest_free, 1u << 20);
}

// Regions of inaccessible memory, like a device's.
struct no_access_upstream {
  void* allocate(std::size_t bytes, std::size_t) {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t) { munmap(p, bytes); }
  bool is_equal(const no_access_upstream&) const noexcept { return true; }
};

TEST(Buddy, NeverTouchesItsRegion) {
  buddy<no_access_upstream> pool(buddy_config{.total_bytes = 64 << 20, .min_block = 64});
  std::mt19937_64 rng(5);
  std::map<void*, std::size_t> live_blocks;
  for (int step = 0; step < 50000; ++step) {
    if (!live_blocks.empty() && (rng() % 2 == 0 || live_blocks.size() > 1000)) {
      auto it = std::next(live_blocks.begin(), static_cast<long>(rng() % live_blocks.size()));
      pool.deallocate(it->first, it->second);
      live_blocks.erase(it);
    } else {
      std::size_t bytes = rng() % 70000;
      live_blocks[pool.allocate(bytes, 64)] = bytes;
    }
  }
  for (auto& [p, bytes] : live_blocks) pool.deallocate(p, bytes);
  EXPECT_EQ(pool.statistics().largest_free, 64u << 20);
}

}  // namespace
