// Fixed-size pools, the slab and object_pool<T>: reuse, alignment, ownership.
#include <strata/pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr strata::pool_config checked{.checked = true};
using checked_pool = strata::fixed_pool<strata::malloc_resource, checked>;

TEST(FixedPool, BlocksAreAlignedDisjointAndReused) {
  checked_pool pool(48, 16, 4096);
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    void* p = pool.allocate();
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
    std::memset(p, i & 0xff, 48);
    blocks.push_back(p);
  }
  std::vector<char*> sorted(blocks.size());
  std::transform(blocks.begin(), blocks.end(), sorted.begin(),
                 [](void* p) { return static_cast<char*>(p); });
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) ASSERT_GE(sorted[i] - sorted[i - 1], 48);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<unsigned char*>(blocks[i])[47], i & 0xff);
  EXPECT_EQ(pool.live_blocks(), 1000u);
  std::size_t chunks = pool.chunks();
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.live_blocks(), 0u);
  for (int i = 0; i < 1000; ++i) blocks[i] = pool.allocate();
  EXPECT_EQ(pool.chunks(), chunks);  // every block came back from the free list
  for (void* p : blocks) pool.deallocate(p);
}

TEST(FixedPool, BadSizesAndAlignmentsThrow) {
  EXPECT_THROW(checked_pool(64, 24), std::invalid_argument);
  EXPECT_THROW(checked_pool(64, 16, 5000), std::invalid_argument);
  EXPECT_THROW(checked_pool(8192, 16, 4096), std::invalid_argument);
  checked_pool pool(64, 16, 4096);
  EXPECT_THROW((void)pool.allocate(65, 8), std::bad_alloc);
  EXPECT_THROW((void)pool.allocate(64, 32), std::bad_alloc);
  EXPECT_THROW((void)pool.allocate(64, 3), std::invalid_argument);
}

TEST(FixedPool, TinyBlocksHoldTheFreeLink) {
  checked_pool pool(1, 1, 4096);
  std::vector<void*> blocks(100);
  pool.allocate_batch(blocks.size(), blocks.data());
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), 100u);
  pool.deallocate_batch(blocks.data(), blocks.size());
  EXPECT_EQ(pool.live_blocks(), 0u);
}

TEST(FixedPool, BatchSpansChunks) {
  checked_pool pool(64, 64, 4096);
  std::vector<void*> blocks(1000);
  pool.allocate_batch(blocks.size(), blocks.data());
  EXPECT_EQ(pool.live_blocks(), 1000u);
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), 1000u);
  for (void* p : blocks) {
    ASSERT_EQ(checked_pool::owner_of(p, 4096), &pool);
    std::memset(p, 0, 64);
  }
  pool.deallocate_batch(blocks.data(), blocks.size());
  EXPECT_EQ(pool.live_blocks(), 0u);
}

using PoolDeathTest = testing::Test;

TEST(PoolDeathTest, FreeIntoTheWrongPoolAborts) {
  checked_pool one(64, 16, 4096);
  checked_pool two(64, 16, 4096);
  void* p = one.allocate();
  EXPECT_DEATH(two.deallocate(p),
               "strata: block freed into the wrong pool in fixed_pool::deallocate");
  one.deallocate(p);
}

TEST(FixedPool, RandomAgainstShadow) {
  std::mt19937_64 rng(7);
  checked_pool pool(40, 8, 8192);
  std::vector<std::pair<unsigned char*, unsigned char>> live;
  for (int step = 0; step < 50000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      auto* p = static_cast<unsigned char*>(pool.allocate());
      auto fill = static_cast<unsigned char>(rng());
      std::memset(p, fill, 40);
      live.emplace_back(p, fill);
    } else {
      std::size_t pick = rng() % live.size();
      for (int j = 0; j < 40; ++j) ASSERT_EQ(live[pick].first[j], live[pick].second);
      pool.deallocate(live[pick].first);
      live[pick] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(pool.live_blocks(), live.size());
  }
  std::set<unsigned char*> distinct;
  for (auto& [p, fill] : live) ASSERT_TRUE(distinct.insert(p).second);
}

TEST(Slab, HandsOutAlignedPagesAndTakesThemBack) {
  strata::slab<> pages(4096, 4);
  std::vector<void*> taken;
  for (int i = 0; i < 10; ++i) {
    void* p = pages.allocate(4096, 4096);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
    std::memset(p, i, 4096);
    taken.push_back(p);
  }
  EXPECT_EQ(pages.pages_held(), 12u);
  EXPECT_EQ(pages.pages_free(), 2u);
  for (void* p : taken) pages.deallocate(p);
  EXPECT_EQ(pages.pages_free(), 12u);
  EXPECT_THROW((void)pages.allocate(8192, 16), std::bad_alloc);
  EXPECT_THROW(strata::slab<>(1000), std::invalid_argument);
}

TEST(Slab, FeedsPoolsThroughUpstreamRef) {
  strata::slab<> pages(16384, 8);
  using slab_pool = strata::fixed_pool<strata::upstream_ref<strata::slab<>>, checked>;
  {
    slab_pool small(32, 16, 16384, strata::upstream_ref(pages));
    slab_pool large(512, 64, 16384, strata::upstream_ref(pages));
    for (int i = 0; i < 2000; ++i) {
      (void)small.allocate();
      (void)large.allocate();
    }
    EXPECT_EQ(pages.pages_held() - pages.pages_free(), small.chunks() + large.chunks());
  }
  EXPECT_EQ(pages.pages_free(), pages.pages_held());
}

struct tracked {
  static inline int alive = 0;
  std::string name;
  explicit tracked(std::string n) : name(std::move(n)) {
    if (name == "throw") throw std::runtime_error("no");
    ++alive;
  }
  ~tracked() { --alive; }
};

TEST(ObjectPool, ConstructsAndDestroys) {
  strata::object_pool<tracked> pool;
  tracked* a = pool.create("a");
  tracked* b = pool.create(std::string(100, 'b'));
  EXPECT_EQ(tracked::alive, 2);
  EXPECT_EQ(a->name, "a");
  EXPECT_EQ(b->name.size(), 100u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % alignof(tracked), 0u);
  pool.destroy(a);
  EXPECT_EQ(tracked::alive, 1);
  EXPECT_EQ(pool.create("c"), a);  // the freed block is reused first
  EXPECT_THROW((void)pool.create("throw"), std::runtime_error);
  EXPECT_EQ(pool.live_objects(), 2u);
  pool.destroy(b);
  pool.destroy(a);
  EXPECT_EQ(tracked::alive, 0);
}

}  // namespace

#ifdef STRATA_ASAN
namespace {

using PoolAsanDeathTest = testing::Test;

unsigned char read_byte(volatile unsigned char* p) {
  return *p;
}

TEST(PoolAsanDeathTest, AddressSanitizerSeesFreedBlocks) {
  checked_pool pool(64, 16, 4096);
  auto* p = static_cast<unsigned char*>(pool.allocate());
  pool.deallocate(p);
  EXPECT_DEATH((void)read_byte(p + 32), "use-after-poison");
}

}  // namespace
#endif
