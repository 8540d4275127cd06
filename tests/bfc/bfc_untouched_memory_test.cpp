// bfc never reads or writes the memory it manages: over an upstream whose
// regions are mapped PROT_NONE (any access faults), a random workload with
// alignment, splits, merges, growth and garbage collection runs to the end.
#include <strata/bfc.hpp>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <random>

namespace {

// Regions of inaccessible memory, like a device's.
struct no_access_upstream {
  // An anonymous PROT_NONE mapping (page alignment covers the granule).
  void* allocate(std::size_t bytes, std::size_t) {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t) { munmap(p, bytes); }
  bool is_equal(const no_access_upstream&) const noexcept { return true; }
};

TEST(BfcUntouchedMemory, RunsOverProtNoneRegions) {
  strata::bfc_config config;
  config.initial_region_bytes = 256 * 1024;
  config.max_region_bytes = 8 << 20;
  strata::bfc<no_access_upstream> pool(config);
  std::mt19937_64 rng(77);
  std::map<void*, std::size_t> live;
  for (int step = 0; step < 50000; ++step) {
    if (!live.empty() && (rng() % 2 == 0 || live.size() > 2000)) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      pool.deallocate(it->first, it->second);
      live.erase(it);
    } else {
      std::size_t bytes = rng() % 70000;
      std::size_t alignment = std::size_t{1} << (rng() % 14);
      void* p = pool.allocate(bytes, alignment);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
      live[p] = bytes;
    }
    if (step % 10000 == 0) pool.garbage_collect();
  }
  EXPECT_FALSE(pool.dump_text().empty());
  for (auto& [p, bytes] : live) pool.deallocate(p, bytes);
  std::size_t reserved = pool.statistics().bytes_reserved;
  EXPECT_EQ(pool.garbage_collect(), reserved);
  EXPECT_EQ(pool.statistics().regions, 0u);
}

}  // namespace
