// AddressSanitizer sees pool blocks and slab pages once they are freed: a read
// of one dies with use-after-poison. Skipped in builds without AddressSanitizer.
#include <strata/pool.hpp>

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

using PoolPoisonDeathTest = testing::Test;

TEST(PoolPoisonDeathTest, ObjectPoolObjectAfterDestroyIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  struct object {
    char bytes[64];
  };
  strata::object_pool<object> objects(4096);
  object* o = objects.create();
  objects.destroy(o);
  EXPECT_DEATH((void)read_byte(o->bytes + 40), "use-after-poison");
}

TEST(PoolPoisonDeathTest, SlabPageAfterDeallocateIsPoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::slab<> slab(4096, 2);
  auto* page = static_cast<char*>(slab.allocate(4096));
  (void)read_byte(page + 100);
  slab.deallocate(page);
  EXPECT_DEATH((void)read_byte(page + 100), "use-after-poison");
}

TEST(PoolPoisonDeathTest, BlocksNeverHandedOutArePoisoned) {
  if (!asan) GTEST_SKIP() << "built without AddressSanitizer";
  strata::fixed_pool<> pool(64, 16, 4096);
  auto* p = static_cast<char*>(pool.allocate());
  EXPECT_DEATH((void)read_byte(p + 64), "use-after-poison");
  pool.deallocate(p);
}

}  // namespace
