// bfc against a shadow model: random allocate/free sequences keep every
// block's bytes, never overlap, honour alignment; after every step no two
// adjacent chunks are free and the statistics add up; garbage_collect gives
// every free region back to the upstream.
#include <strata/bfc.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "counting_upstream.hpp"

namespace {

using strata::bfc;
using strata::bfc_config;
using strata::test::counting_upstream;
using strata::test::upstream_log;

struct live {
  std::size_t bytes;
  unsigned char pattern;
};

// Walk the occupancy map: chunks tile each region, no two free chunks touch,
// and the sums match the statistics.
template <class Bfc>
void check_structure(const Bfc& pool) {
  strata::bfc_statistics s = pool.statistics();
  std::size_t used = 0, free = 0, free_count = 0, used_count = 0, largest = 0, reserved = 0;
  std::uintptr_t expect = 0, region_end = 0;
  bool previous_free = false;
  pool.visit([&](std::uintptr_t base, std::size_t bytes, std::uintptr_t chunk, std::size_t size,
                 bool is_free) {
    if (chunk == base) {
      EXPECT_EQ(expect, region_end) << "a region's chunks do not reach its end";
      expect = base;
      region_end = base + bytes;
      reserved += bytes;
      previous_free = false;
    }
    EXPECT_EQ(chunk, expect) << "chunks do not tile the region";
    EXPECT_GT(size, 0u);
    EXPECT_FALSE(is_free && previous_free) << "two adjacent free chunks";
    expect = chunk + size;
    previous_free = is_free;
    if (is_free) {
      free += size;
      ++free_count;
      largest = std::max(largest, size);
    } else {
      used += size;
      ++used_count;
    }
  });
  EXPECT_EQ(expect, region_end);
  EXPECT_EQ(s.bytes_in_use, used);
  EXPECT_EQ(s.bytes_free, free);
  EXPECT_EQ(s.bytes_reserved, reserved);
  EXPECT_EQ(s.bytes_in_use + s.bytes_free, s.bytes_reserved);
  EXPECT_EQ(s.free_chunks, free_count);
  EXPECT_EQ(s.chunks_in_use, used_count);
  EXPECT_EQ(s.largest_free, largest);
}

// Random sequences with a shadow: contents, overlap, alignment, structure.
TEST(Bfc, RandomSequenceAgainstShadow) {
  upstream_log log;
  {
    bfc_config config;
    config.initial_region_bytes = 64 * 1024;
    config.max_region_bytes = 4 << 20;
    bfc<counting_upstream> pool(config, counting_upstream(log));
    std::mt19937_64 rng(1234);
    std::map<std::uintptr_t, live> blocks;
    for (int step = 0; step < 20000; ++step) {
      bool do_free = !blocks.empty() && (rng() % 100 < 45 || blocks.size() > 600);
      if (do_free) {
        auto it = std::next(blocks.begin(), static_cast<long>(rng() % blocks.size()));
        auto* p = reinterpret_cast<unsigned char*>(it->first);
        for (std::size_t k = 0; k < it->second.bytes; ++k)
          ASSERT_EQ(p[k], it->second.pattern) << "block contents changed";
        pool.deallocate(p, it->second.bytes);
        blocks.erase(it);
      } else {
        std::size_t bytes = rng() % 8 == 0 ? rng() % 200000 : rng() % 2000;
        std::size_t alignment = std::size_t{1} << (rng() % 13);
        auto* p = static_cast<unsigned char*>(pool.allocate(bytes, alignment));
        auto address = reinterpret_cast<std::uintptr_t>(p);
        ASSERT_EQ(address % alignment, 0u);
        auto next = blocks.lower_bound(address);
        if (next != blocks.end()) {
          ASSERT_GE(next->first, address + std::max<std::size_t>(bytes, 1));
        }
        if (next != blocks.begin()) {
          auto before = std::prev(next);
          ASSERT_LE(before->first + std::max<std::size_t>(before->second.bytes, 1), address);
        }
        auto pattern = static_cast<unsigned char>(step);
        std::memset(p, pattern, bytes);
        blocks[address] = {bytes, pattern};
      }
      if (step % 97 == 0) check_structure(pool);
      if (step % 5000 == 4999) {
        std::size_t before = pool.statistics().bytes_reserved;
        std::size_t returned = pool.garbage_collect();
        EXPECT_EQ(pool.statistics().bytes_reserved, before - returned);
        check_structure(pool);
      }
    }
    check_structure(pool);
    for (auto& [address, block] : blocks)
      pool.deallocate(reinterpret_cast<void*>(address), block.bytes);
    strata::bfc_statistics s = pool.statistics();
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.free_chunks, s.regions) << "each empty region is one free chunk";
    EXPECT_DOUBLE_EQ(s.fragmentation(), 1.0 - static_cast<double>(s.largest_free) /
                                                  static_cast<double>(s.bytes_reserved));
    EXPECT_EQ(pool.garbage_collect(), s.bytes_reserved);
    EXPECT_EQ(pool.statistics().bytes_reserved, 0u);
    EXPECT_EQ(pool.statistics().regions, 0u);
    EXPECT_EQ(log.live_bytes, 0u) << "garbage_collect returns every free region";
    EXPECT_EQ(log.allocations, log.deallocations);
  }
  EXPECT_EQ(log.live_bytes, 0u);
}

// Freeing merges with both neighbours at once, and best fit picks the
// smallest hole that fits rather than the first.
TEST(Bfc, CoalescesAndPicksBestFit) {
  bfc_config config;
  config.initial_region_bytes = 1 << 20;
  bfc<> pool(config);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.allocate(4096));
  pool.deallocate(blocks[1], 4096);  // a 4 KiB hole
  pool.deallocate(blocks[3], 4096);
  pool.deallocate(blocks[4], 4096);              // an 8 KiB hole
  EXPECT_EQ(pool.statistics().free_chunks, 3u);  // two holes and the region's tail
  pool.deallocate(blocks[2], 4096);              // joins both: one 16 KiB hole
  EXPECT_EQ(pool.statistics().free_chunks, 2u);
  void* small = pool.allocate(4096);
  pool.deallocate(blocks[6], 4096);  // a 4 KiB hole after the 12 KiB one
  void* fit = pool.allocate(4000);
  EXPECT_EQ(fit, blocks[6]) << "best fit takes the 4 KiB hole";
  EXPECT_EQ(small, blocks[1]) << "the lowest address among equal fits";
  pool.deallocate(fit, 4000);
  pool.deallocate(small, 4096);
  for (int i : {0, 5, 7}) pool.deallocate(blocks[static_cast<std::size_t>(i)], 4096);
  EXPECT_EQ(pool.statistics().free_chunks, 1u);
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

// A small request from a large chunk splits it; a request that leaves less
// than an eighth of itself (or min_split_bytes) takes the whole chunk.
TEST(Bfc, SplitRuleKeepsSliversAttached) {
  bfc_config config;
  config.initial_region_bytes = 1 << 20;
  bfc<> pool(config);
  void* a = pool.allocate(1 << 20);  // the whole region
  void* b = pool.allocate(8192);
  void* guard = pool.allocate(64);
  pool.deallocate(b, 8192);
  void* c = pool.allocate(8192 - 512);  // rest 512 < 8192/8: no split
  EXPECT_EQ(c, b);
  EXPECT_EQ(pool.statistics().bytes_in_use, (1u << 20) + 8192 + 64);
  pool.deallocate(c, 8192 - 512);
  void* d = pool.allocate(4096);  // rest 4096: split
  EXPECT_EQ(pool.statistics().bytes_in_use, (1u << 20) + 4096 + 64);
  pool.deallocate(d, 4096);
  pool.deallocate(guard, 64);
  pool.deallocate(a, 1 << 20);
}

// Fixed regions stay one size; doubling ones grow to the cap; a refusing
// upstream is asked again for smaller regions down to the request.
TEST(Bfc, RegionGrowthAndBackOff) {
  upstream_log log;
  bfc_config config;
  config.initial_region_bytes = 64 * 1024;
  config.max_region_bytes = 256 * 1024;
  bfc<counting_upstream> pool(config, counting_upstream(log));
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 6; ++i) {
    pool.allocate(60 * 1024);
    sizes.push_back(log.live.rbegin()->second);
  }
  std::vector<std::size_t> region_sizes;
  for (auto& [address, bytes] : log.live) region_sizes.push_back(bytes);
  std::sort(region_sizes.begin(), region_sizes.end());
  EXPECT_EQ(region_sizes.front(), 64u * 1024);
  EXPECT_EQ(region_sizes.back(), 256u * 1024);

  upstream_log fixed_log;
  bfc_config fixed = config;
  fixed.growth = strata::bfc_growth::fixed;
  bfc<counting_upstream> flat(fixed, counting_upstream(fixed_log));
  for (int i = 0; i < 4; ++i) flat.allocate(60 * 1024);
  for (auto& [address, bytes] : fixed_log.live) EXPECT_EQ(bytes, 64u * 1024);

  upstream_log tight;
  tight.refuse_above = 100 * 1024;
  bfc_config big;
  big.initial_region_bytes = 1 << 20;
  bfc<counting_upstream> backing_off(big, counting_upstream(tight));
  void* p = backing_off.allocate(70 * 1024);
  EXPECT_NE(p, nullptr);
  EXPECT_LE(tight.live.begin()->second, 100u * 1024);
  EXPECT_GE(tight.live.begin()->second, 70u * 1024);
  backing_off.deallocate(p, 70 * 1024);
}

// max_reserved_bytes caps the total; garbage_collect makes room first.
TEST(Bfc, ReservedCapCollectsBeforeRefusing) {
  upstream_log log;
  bfc_config config;
  config.initial_region_bytes = 64 * 1024;
  config.growth = strata::bfc_growth::fixed;
  config.max_reserved_bytes = 128 * 1024;
  bfc<counting_upstream> pool(config, counting_upstream(log));
  void* a = pool.allocate(64 * 1024);
  void* b = pool.allocate(64 * 1024);
  EXPECT_THROW(pool.allocate(64), std::bad_alloc);
  pool.deallocate(a, 64 * 1024);
  void* c = pool.allocate(64 * 1024);
  EXPECT_EQ(c, a);
  pool.deallocate(c, 64 * 1024);
  pool.deallocate(b, 64 * 1024);
  EXPECT_EQ(pool.trim(64 * 1024), 64u * 1024);
  EXPECT_EQ(pool.statistics().bytes_reserved, 64u * 1024);
  EXPECT_EQ(pool.trim(0), 64u * 1024);
  EXPECT_EQ(log.live_bytes, 0u);
}

// trim keeps at most keep_bytes free, returning the largest free regions first.
TEST(Bfc, TrimKeepsTheAskedFreeBytes) {
  upstream_log log;
  bfc_config config;
  config.initial_region_bytes = 64 * 1024;
  config.max_region_bytes = 1 << 20;
  bfc<counting_upstream> pool(config, counting_upstream(log));
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate(64 * 1024 - 64 * i));
  for (int i = 0; i < 4; ++i) pool.deallocate(blocks[static_cast<std::size_t>(i)], 1);
  std::size_t reserved = pool.statistics().bytes_reserved;
  std::size_t returned = pool.trim(300 * 1024);
  EXPECT_LE(pool.statistics().bytes_free, 300u * 1024);
  EXPECT_EQ(pool.statistics().bytes_reserved, reserved - returned);
  EXPECT_EQ(log.live_bytes, pool.statistics().bytes_reserved);
}

// The dumps show every chunk with its offset, size and state.
TEST(Bfc, OccupancyDumps) {
  bfc_config config;
  config.initial_region_bytes = 4096;
  config.growth = strata::bfc_growth::fixed;
  bfc<> pool(config);
  void* a = pool.allocate(1024);
  void* b = pool.allocate(1024);
  pool.deallocate(a, 1024);
  std::string text = pool.dump_text();
  EXPECT_NE(text.find("1 regions, reserved 4096, in use 1024, free 3072, largest free 2048"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  +0 1024 free\n  +1024 1024 used\n  +2048 2048 free\n"), std::string::npos)
      << text;
  std::string json = pool.dump_json();
  EXPECT_NE(json.find("\"fragmentation\":0.3333"), std::string::npos) << json;
  EXPECT_NE(json.find("\"chunks\":[{\"offset\":0,\"bytes\":1024,\"free\":true},{\"offset\":1024,"
                      "\"bytes\":1024,\"free\":false},{\"offset\":2048,\"bytes\":2048,\"free\":"
                      "true}]"),
            std::string::npos)
      << json;
  EXPECT_NEAR(pool.statistics().fragmentation(), 1.0 / 3.0, 1e-9);
  pool.deallocate(b, 1024);
}

// As a std::pmr resource through resource_ref.
TEST(Bfc, ServesPmrContainers) {
  bfc<> pool;
  strata::resource_ref ref(pool);
  std::pmr::vector<int> numbers(&ref);
  for (int i = 0; i < 10000; ++i) numbers.push_back(i);
  EXPECT_EQ(numbers[9999], 9999);
  EXPECT_GT(pool.statistics().bytes_in_use, 0u);
  numbers = {};
  numbers.shrink_to_fit();
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

}  // namespace
