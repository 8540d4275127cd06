// Pools and the slab on bad input: constructor arguments that overflow or do
// not fit throw; freeing anything but a live block of the pool aborts with
// one line naming it, before the pool is touched.
#include <strata/pool.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using pool = strata::fixed_pool<>;
using concurrent_pool = strata::concurrent_fixed_pool<>;

constexpr std::size_t huge_alignment = std::size_t{1} << 63;

TEST(PoolBadInput, ConstructorArgumentsThatOverflowOrDoNotFitThrow) {
  EXPECT_THROW(pool(SIZE_MAX), std::invalid_argument);
  EXPECT_THROW(pool(SIZE_MAX - 7, 16), std::invalid_argument);
  EXPECT_THROW(pool(16, huge_alignment), std::invalid_argument);
  EXPECT_THROW(pool(16, 0), std::invalid_argument);
  EXPECT_THROW(pool(16, 16, 0), std::invalid_argument);
  EXPECT_THROW(pool(16, 16, std::size_t{1} << 33), std::invalid_argument);
  EXPECT_THROW(pool(4096, 4096, 4096), std::invalid_argument);
  EXPECT_THROW((strata::slab<>(0)), std::invalid_argument);
  EXPECT_THROW((strata::slab<>(std::size_t{1} << 63, SIZE_MAX)), std::bad_array_new_length);
}

TEST(PoolBadInput, ResourceFaceAnswersZeroHugeAndBadAlignment) {
  pool p(64, 16, 4096);
  void* zero = p.allocate(0, 1);
  EXPECT_NE(zero, nullptr);
  EXPECT_THROW((void)p.allocate(SIZE_MAX, 16), std::bad_alloc);
  EXPECT_THROW((void)p.allocate(16, huge_alignment), std::bad_alloc);
  EXPECT_THROW((void)p.allocate(16, 0), std::invalid_argument);
  EXPECT_THROW((void)p.allocate(16, SIZE_MAX), std::invalid_argument);
  p.deallocate(zero, 0, 1);
  EXPECT_EQ(p.live_blocks(), 0u);
}

TEST(PoolBadInput, ZeroByteBlocksAreDistinctAndChecked) {
  pool p(0, 1, 4096);
  void* a = p.allocate();
  void* b = p.allocate();
  EXPECT_NE(a, b);
  p.deallocate(a);
  p.deallocate(b);
}

TEST(PoolBadInput, SlabRefusesPagesItCannotGive) {
  strata::slab<> slab(4096, 2);
  EXPECT_THROW((void)slab.allocate(4097), std::bad_alloc);
  EXPECT_THROW((void)slab.allocate(16, 8192), std::bad_alloc);
  EXPECT_THROW((void)slab.allocate(16, 3), std::invalid_argument);
}

using PoolBadInputDeathTest = testing::Test;

TEST(PoolBadInputDeathTest, FreeOfAMallocBlockAborts) {
  pool p(64, 16, 4096);
  void* mine = p.allocate();
  void* foreign = std::malloc(64);
  EXPECT_DEATH(p.deallocate(foreign),
               "strata: block freed into the wrong pool in fixed_pool::deallocate");
  std::free(foreign);
  p.deallocate(mine);
}

TEST(PoolBadInputDeathTest, FreeOfAnUnmappedAddressAborts) {
  pool p(64, 16, 4096);
  EXPECT_DEATH(p.deallocate(reinterpret_cast<void*>(std::uintptr_t{0x10})),
               "strata: block freed into the wrong pool");
}

TEST(PoolBadInputDeathTest, FreeOfAnInteriorPointerAborts) {
  pool p(48, 16, 4096);
  auto* block = static_cast<char*>(p.allocate());
  EXPECT_DEATH(p.deallocate(block + 16),
               "strata: pointer inside a pool block, not at its start, freed in "
               "fixed_pool::deallocate");
  EXPECT_DEATH(p.deallocate(block - 8), "strata: pointer inside a pool block");
  p.deallocate(block);
}

TEST(PoolBadInputDeathTest, FreeOfTheChunkHeaderAborts) {
  pool p(48, 16, 4096);
  auto* block = static_cast<char*>(p.allocate());
  auto chunk = reinterpret_cast<std::uintptr_t>(block) & ~std::uintptr_t{4095};
  EXPECT_DEATH(p.deallocate(reinterpret_cast<void*>(chunk)), "strata: pointer inside a pool block");
  p.deallocate(block);
}

TEST(PoolBadInputDeathTest, FreeOfABlockNeverHandedOutAborts) {
  pool p(64, 16, 4096);
  auto* block = static_cast<char*>(p.allocate());
  EXPECT_DEATH(p.deallocate(block + 64),
               "strata: pool block that was never allocated freed in fixed_pool::deallocate");
  p.deallocate(block);
}

TEST(PoolBadInputDeathTest, DoubleFreeAborts) {
  pool p(64, 16, 4096);
  void* a = p.allocate();
  void* b = p.allocate();
  p.deallocate(a);
  p.deallocate(b);
  EXPECT_DEATH(p.deallocate(a), "strata: double free of a pool block in fixed_pool::deallocate");
}

TEST(PoolBadInputDeathTest, ConcurrentPoolChecksToo) {
  concurrent_pool p(64, 16, 4096);
  void* a = p.allocate();
  p.deallocate(a);
  EXPECT_DEATH(p.deallocate(a), "strata: double free of a pool block");
  void* foreign = std::malloc(64);
  EXPECT_DEATH(p.deallocate(foreign), "strata: block freed into the wrong pool");
  std::free(foreign);
}

TEST(PoolBadInputDeathTest, BatchWithABadBlockAbortsBeforeFreeingAny) {
  pool p(64, 16, 4096);
  void* blocks[3] = {p.allocate(), p.allocate(), p.allocate()};
  void* twice[2] = {blocks[0], blocks[0]};
  EXPECT_DEATH(p.deallocate_batch(twice, 2),
               "strata: double free of a pool block in fixed_pool::deallocate_batch");
  void* foreign = std::malloc(64);
  void* mixed[2] = {blocks[1], foreign};
  EXPECT_DEATH(p.deallocate_batch(mixed, 2), "strata: block freed into the wrong pool");
  std::free(foreign);
  p.deallocate_batch(blocks, 3);
  EXPECT_EQ(p.live_blocks(), 0u);
}

// Says on stderr that it ran, so a death test can tell it did not.
struct noisy {
  ~noisy() { std::fputs("destructor ran\n", stderr); }
  std::uint64_t payload[4];
};

TEST(PoolBadInputDeathTest, ObjectPoolChecksBeforeTheDestructorRuns) {
  strata::object_pool<noisy> objects(4096);
  noisy* a = objects.create();
  (void)objects.create();
  testing::internal::CaptureStderr();
  objects.destroy(a);
  testing::internal::GetCapturedStderr();
  EXPECT_DEATH(objects.destroy(a), "^strata: double free of a pool block in object_pool::destroy");
  EXPECT_DEATH(objects.destroy(reinterpret_cast<noisy*>(reinterpret_cast<char*>(a) + 8)),
               "^strata: pointer inside a pool block");
  auto* outside = static_cast<noisy*>(std::malloc(sizeof(noisy)));
  EXPECT_DEATH(objects.destroy(outside), "^strata: block freed into the wrong pool");
  std::free(outside);
}

TEST(PoolBadInputDeathTest, SlabFreeOfAForeignMisalignedOrFreePageAborts) {
  strata::slab<> slab(4096, 2);
  auto* page = static_cast<char*>(slab.allocate(4096));
  void* foreign = std::aligned_alloc(4096, 4096);
  EXPECT_DEATH(slab.deallocate(foreign),
               "strata: page freed into the wrong slab in slab::deallocate");
  std::free(foreign);
  EXPECT_DEATH(slab.deallocate(page + 64), "strata: page freed into the wrong slab");
  slab.deallocate(page);
  EXPECT_DEATH(slab.deallocate(page), "strata: double free of a slab page in slab::deallocate");
}

}  // namespace
