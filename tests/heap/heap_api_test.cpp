// The C API's contract: sizes, alignment, errno on bad input, realloc, detected corruption.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "heap/segment.hpp"
#include "strata/strata.h"

namespace {
bool aligned_to(const void* p, std::size_t a) {
  return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}
}  // namespace

TEST(HeapApi, MallocZeroIsUniqueAndFreeable) {
  std::set<void*> seen;
  for (int i = 0; i < 100; ++i) {
    void* p = strata_malloc(0);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(p).second);
  }
  for (void* p : seen) strata_free(p);
  strata_free(nullptr);
}

TEST(HeapApi, EveryBlockIs16ByteAlignedAndPowersOfTwoNaturally) {
  for (std::size_t size = 1; size <= 20000; size += 7) {
    void* p = strata_malloc(size);
    ASSERT_TRUE(aligned_to(p, 16)) << size;
    ASSERT_GE(strata_usable_size(p), size);
    strata_free(p);
  }
  for (std::size_t size = 16; size <= 4096; size *= 2) {
    void* blocks[8];
    for (void*& p : blocks) {
      p = strata_malloc(size);
      EXPECT_TRUE(aligned_to(p, size)) << size;
    }
    for (void* p : blocks) strata_free(p);
  }
}

TEST(HeapApi, AlignedAllocationUpTo16MiB) {
  for (std::size_t align = 16; align <= (std::size_t{16} << 20); align *= 2) {
    for (std::size_t size : {std::size_t{1}, std::size_t{100}, align / 2 + 1, align, 3 * align + 5,
                             std::size_t{9} << 20}) {
      void* p = strata_malloc_aligned(size, align);
      ASSERT_NE(p, nullptr) << size << " @" << align;
      EXPECT_TRUE(aligned_to(p, align)) << size << " @" << align;
      ASSERT_GE(strata_usable_size(p), size);
      std::memset(p, 0x3c, size);
      strata_free(p);
    }
  }
}

TEST(HeapApi, EverySmallAlignedRequestIsAlignedAndDistinct) {
  // Sizes up to 1100 at each alignment up to 2 KiB: the inline path and the
  // slow path together, with live blocks that must not overlap.
  for (std::size_t align = 8; align <= 2048; align *= 2) {
    std::vector<std::pair<unsigned char*, std::size_t>> live;
    for (std::size_t size = 0; size <= 1100; size += 3) {
      void* p = nullptr;
      ASSERT_EQ(strata_posix_memalign(&p, align, size), 0) << size << " @" << align;
      ASSERT_TRUE(aligned_to(p, align < 16 ? 16 : align)) << size << " @" << align;
      ASSERT_GE(strata_usable_size(p), size);
      std::memset(p, static_cast<int>(size & 0xff), size);
      live.emplace_back(static_cast<unsigned char*>(p), size);
    }
    for (auto [p, size] : live) {
      for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(p[i], size & 0xff) << size << " @" << align;
      strata_free(p);
    }
  }
}

TEST(HeapApi, AlignedBlocksFreedFromInsideTheirBlock) {
  // 48-byte alignment classes force the over-allocate path: the pointer is interior.
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = strata_malloc_aligned(200 + i, 128);
    ASSERT_TRUE(aligned_to(blocks[i], 128));
    std::memset(blocks[i], i, 200 + i);
  }
  for (int i = 0; i < 64; ++i) {
    auto* bytes = static_cast<unsigned char*>(blocks[i]);
    for (int j = 0; j < 200 + i; ++j) ASSERT_EQ(bytes[j], i);
    strata_free(blocks[i]);
  }
}

TEST(HeapApi, UsableSizeReachesExactlyToTheNextBlock) {
  // Blocks of one size sit side by side in their page: each one's usable size
  // is the same, covers the request, divides the distance between two blocks
  // of one 64 KiB slice, and (but in secure mode, which scatters blocks) is
  // the smallest distance between two. A block guarded sampling or the
  // profiler placed is on no page: its usable size is the request rounded up
  // to 16 (at least 16).
  for (std::size_t size : {1, 24, 100, 1000, 1025, 3000, 4368, 5000, 12000, 40000, 200000}) {
    std::vector<std::uintptr_t> starts;
    std::vector<void*> sampled;
    std::size_t usable = 0;
    while (starts.size() < 40) {
      void* p = strata_malloc(size);
      ASSERT_NE(p, nullptr);
      if (!strata::heap::segment_map::contains(strata::heap::segment_of(p))) {
        EXPECT_EQ(strata_usable_size(p), std::max<std::size_t>(16, (size + 15) & ~std::size_t{15}));
        sampled.push_back(p);
        continue;
      }
      if (starts.empty()) usable = strata_usable_size(p);
      ASSERT_EQ(strata_usable_size(p), usable) << size;
      starts.push_back(reinterpret_cast<std::uintptr_t>(p));
    }
    ASSERT_GE(usable, size);
    std::sort(starts.begin(), starts.end());
    std::uintptr_t closest = UINTPTR_MAX;
    for (std::size_t i = 1; i < starts.size(); ++i) {
      std::uintptr_t distance = starts[i] - starts[i - 1];
      closest = std::min(closest, distance);
      if ((starts[i] >> 16) == (starts[i - 1] >> 16)) {
        EXPECT_EQ(distance % usable, 0u) << size;
      }
    }
    EXPECT_GE(closest, usable) << size;
    if (std::getenv("STRATA_SECURE") == nullptr) {
      EXPECT_EQ(closest, usable) << size;
    }
    for (std::uintptr_t p : starts) strata_free(reinterpret_cast<void*>(p));
    for (void* p : sampled) strata_free(p);
  }
  // A pointer inside its block (an aligned one) has the rest of the block;
  // a huge block has all of its mapping's pages; null has none.
  void* block = strata_malloc(1000);
  std::size_t whole = strata_usable_size(block);
  strata_free(block);
  void* aligned = strata_malloc_aligned(200, 512);
  ASSERT_NE(aligned, nullptr);
  std::size_t rest = strata_usable_size(aligned);
  EXPECT_GE(rest, 200u);
  std::memset(aligned, 0x5a, rest);
  strata_free(aligned);
  EXPECT_GT(whole, 0u);
  void* huge = strata_malloc((std::size_t{9} << 20) + 1);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(strata_usable_size(huge) % 4096, 0u);
  EXPECT_GE(strata_usable_size(huge), (std::size_t{9} << 20) + 1);
  strata_free(huge);
  EXPECT_EQ(strata_usable_size(nullptr), 0u);
}

TEST(HeapApi, BadInputGivesNullAndErrno) {
  errno = 0;
  EXPECT_EQ(strata_malloc(SIZE_MAX), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(strata_malloc(SIZE_MAX / 2), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(strata_calloc(SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(strata_malloc_aligned(64, 48), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(strata_aligned_alloc(0, 64), nullptr);
  EXPECT_EQ(errno, EINVAL);
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(strata_posix_memalign(&p, 24, 64), EINVAL);
  EXPECT_EQ(strata_posix_memalign(&p, 4, 64), EINVAL);
  EXPECT_EQ(strata_posix_memalign(&p, 64, SIZE_MAX), ENOMEM);
  EXPECT_EQ(p, reinterpret_cast<void*>(1));  // untouched on failure
  ASSERT_EQ(strata_posix_memalign(&p, 64, 100), 0);
  EXPECT_TRUE(aligned_to(p, 64));
  strata_free(p);
  errno = 0;
  EXPECT_EQ(strata_realloc(nullptr, SIZE_MAX), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(strata_usable_size(nullptr), 0u);
}

TEST(HeapApi, CallocZeroesReusedMemory) {
  for (std::size_t size :
       {std::size_t{24}, std::size_t{3000}, std::size_t{200000}, std::size_t{12} << 20}) {
    void* dirty = strata_malloc(size);
    std::memset(dirty, 0xff, size);
    strata_free(dirty);
    auto* p = static_cast<unsigned char*>(strata_calloc(1, size));
    ASSERT_NE(p, nullptr);
    for (std::size_t i = 0; i < size; i += 61) ASSERT_EQ(p[i], 0) << size;
    strata_free(p);
  }
}

TEST(HeapApi, HugeBlocksGrowByDoublingWithContentsKept) {
  // A doubling realloc of a huge block, with a block in the way of growing in
  // place: the mapping moves instead of being copied, and the bytes come along.
  std::size_t size = std::size_t{9} << 20;
  auto* p = static_cast<unsigned char*>(strata_malloc(size));
  for (std::size_t i = 0; i < size; i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
  // A cached segment may serve the first block with room to spare.
  std::size_t first_usable = strata_usable_size(p);
  strata_stats_t before;
  strata_stats_get(&before);
  for (int step = 0; step < 4; ++step) {
    void* neighbour = strata_malloc(std::size_t{9} << 20);  // likely right after p
    std::size_t grown = size * 2;
    auto* q = static_cast<unsigned char*>(strata_realloc(p, grown));
    ASSERT_NE(q, nullptr);
    for (std::size_t i = 0; i < size; i += 4096)
      ASSERT_EQ(q[i], static_cast<unsigned char>(i >> 12)) << i;
    ASSERT_GE(strata_usable_size(q), grown);
    for (std::size_t i = size; i < grown; i += 4096) q[i] = static_cast<unsigned char>(i >> 12);
    strata_free(neighbour);
    p = q;
    size = grown;
  }
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.huge_in_use - before.huge_in_use, strata_usable_size(p) - first_usable);
  strata_free(p);
}

TEST(HeapApi, ReallocPreservesContentsAndShrinksInPlace) {
  auto* p = static_cast<unsigned char*>(strata_malloc(10));
  for (int i = 0; i < 10; ++i) p[i] = static_cast<unsigned char>(i);
  std::size_t size = 10;
  for (std::size_t next : {100, 5000, 70000, 3000000, 20000000, 40000000, 1000, 7}) {
    p = static_cast<unsigned char*>(strata_realloc(p, next));
    ASSERT_NE(p, nullptr);
    for (std::size_t i = 0; i < std::min<std::size_t>(size, next) && i < 10; ++i)
      ASSERT_EQ(p[i], i);
    size = next;
  }
  strata_free(p);
  void* big = strata_malloc(1 << 20);
  EXPECT_EQ(strata_realloc(big, (1 << 20) - 1000), big);  // shrink: no copy
  EXPECT_EQ(strata_expand(big, strata_usable_size(big)), big);
  strata_free(big);
}

TEST(HeapApi, HugeBlocksGrowInPlaceWhenAddressSpaceAllows) {
  void* p = strata_malloc(std::size_t{40} << 20);
  std::memset(p, 1, 40 << 20);
  void* q = strata_expand(p, std::size_t{41} << 20);
  if (q != nullptr) {  // only when the kernel left the next range free
    EXPECT_EQ(q, p);
    EXPECT_GE(strata_usable_size(p), std::size_t{41} << 20);
    static_cast<char*>(p)[(41 << 20) - 1] = 2;
  }
  EXPECT_EQ(strata_expand(strata_malloc(100), 5000), nullptr);  // small blocks cannot grow
  strata_free(p);
}

TEST(HeapApi, BatchAllocatesSeparateBlocks) {
  void* blocks[1000];
  ASSERT_EQ(strata_malloc_batch(64, 1000, blocks), 1000u);
  std::set<void*> distinct(blocks, blocks + 1000);
  EXPECT_EQ(distinct.size(), 1000u);
  for (void* p : blocks) std::memset(p, 7, 64);
  strata_free_batch(blocks, 1000);
}

TEST(HeapApiDeath, DoubleFreeIsReported) {
  EXPECT_DEATH(
      {
        void* p = strata_malloc(5 << 20);  // alone on its page: the second free is detectable
        strata_free(p);
        strata_free(p);
      },
      "strata: heap corruption: double free");
}

TEST(HeapApiDeath, DoubleFreeOnABitmapPageIsReported) {
  EXPECT_DEATH(
      {
        void* keep = strata_malloc(8192);  // pages of 4 KiB blocks and up track free bits
        void* p = strata_malloc(8192);
        void* q = strata_malloc(8192);
        strata_free(q);
        strata_free(p);
        strata_free(p);
        strata_free(keep);
      },
      "strata: heap corruption: double free");
}

TEST(HeapApiDeath, ForeignPointerIsReported) {
  EXPECT_DEATH(
      {
        static char not_ours[64];
        strata_free(not_ours);
      },
      "strata: heap corruption: free of a pointer strata did not allocate");
}
