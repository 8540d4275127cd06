// A simulated, host-backed device with four streams and a caching allocator
// over it, for the caching allocator's suites.
#ifndef STRATA_GPU_TESTS_CACHING_FIXTURE_HPP
#define STRATA_GPU_TESTS_CACHING_FIXTURE_HPP

#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata::gpu::testing {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

class caching_test : public ::testing::Test {
 protected:
  // The device's capacity; a test that wants another sets it before make().
  std::size_t capacity = 256 * mib;
  // Host-backed unless a test rehearses a device larger than it would touch.
  memory_backing backing = memory_backing::host;

  void SetUp() override { make(); }

  void TearDown() override { destroy(); }

  // A fresh device, streams and allocator with `config`.
  void make(caching_config config = {}) {
    destroy();
    simulated_config device_config;
    device_config.capacity = capacity;
    device_config.backing = backing;
    sim = std::make_unique<simulated_device>(device_config);
    for (int i = 0; i < 4; ++i) streams.push_back(sim->create_stream());
    cache = std::make_unique<caching_allocator>(*sim, config);
  }

  // The allocator goes before the streams its blocks are cached with.
  void destroy() {
    cache.reset();
    for (stream s : streams) sim->destroy_stream(s);
    streams.clear();
    sim.reset();
  }

  // Write the pattern `seed` names into `bytes` of device memory (host-backed).
  static void fill(void* p, std::size_t bytes, unsigned seed) {
    auto* data = static_cast<std::uint8_t*>(p);
    for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(seed + i * 13);
  }

  // Whether `bytes` of device memory hold the pattern `seed` names.
  static bool holds(const void* p, std::size_t bytes, unsigned seed) {
    const auto* data = static_cast<const std::uint8_t*>(p);
    for (std::size_t i = 0; i < bytes; ++i)
      if (data[i] != static_cast<std::uint8_t>(seed + i * 13)) return false;
    return true;
  }

  // reserved == active + free, allocated <= active, per pool, and the
  // snapshot's blocks cover its segments and agree with the statistics.
  void expect_consistent() {
    const caching_stats stats = cache->stats();
    const memory_snapshot shot = cache->snapshot();
    std::size_t reserved = 0, allocated = 0, active = 0, free = 0, split_free = 0, requested = 0;
    for (const segment_info& segment : shot.segments) {
      std::size_t covered = 0;
      for (const block_info& b : segment.blocks) {
        EXPECT_EQ(b.offset, covered);
        covered += b.size;
        if (b.state == block_state::active_allocated) allocated += b.size;
        if (b.state != block_state::inactive) active += b.size;
        if (b.state == block_state::inactive) free += b.size;
        if (b.state == block_state::inactive && segment.blocks.size() > 1) split_free += b.size;
        requested += b.requested;
      }
      EXPECT_EQ(covered, segment.size);
      reserved += segment.size;
    }
    const caching_pool_stats& all = stats.all;
    EXPECT_EQ(static_cast<std::size_t>(all.reserved_bytes.current), reserved);
    EXPECT_EQ(static_cast<std::size_t>(all.allocated_bytes.current), allocated);
    EXPECT_EQ(static_cast<std::size_t>(all.active_bytes.current), active);
    EXPECT_EQ(static_cast<std::size_t>(all.inactive_split_bytes.current), split_free);
    EXPECT_EQ(static_cast<std::size_t>(all.requested_bytes.current), requested);
    EXPECT_EQ(reserved, active + free);
    EXPECT_EQ(static_cast<std::size_t>(all.segment.current), shot.segments.size());
    for (auto field : {&caching_pool_stats::reserved_bytes, &caching_pool_stats::allocated_bytes,
                       &caching_pool_stats::active_bytes, &caching_pool_stats::segment,
                       &caching_pool_stats::allocation, &caching_pool_stats::requested_bytes})
      EXPECT_EQ((stats.all.*field).current,
                (stats.small.*field).current + (stats.large.*field).current);
  }

  std::unique_ptr<simulated_device> sim;
  std::vector<stream> streams;
  std::unique_ptr<caching_allocator> cache;
};

}  // namespace strata::gpu::testing

#endif
