// The device pool and the pinned pool shared by 8 threads allocating on 4
// streams: every block carries its thread's pattern through queued work, and
// everything is back when the threads are done.
#include "backends.hpp"

#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/pinned_pool.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr int threads = 8;
constexpr int streams = 4;
constexpr int rounds = 300;

// Whether `bytes` at p all hold `value`.
bool holds(const void* p, std::size_t bytes, std::uint8_t value) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != value) return false;
  return true;
}

// Queued work on each stream fills a block with its thread's value and checks
// it after the other streams' work had a chance to run.
TEST(pool_concurrency, DevicePoolBlocksKeepTheirPatternsAcrossStreams) {
  simulated_config config;
  config.capacity = std::size_t{256} << 20;
  simulated_device dev(config);
  device_pool_config pool_config;
  pool_config.reserve_bytes = std::size_t{4} << 20;  // small, so streams contend for blocks
  device_pool pool(dev, pool_config);
  std::vector<stream> lanes;
  for (int i = 0; i < streams; ++i) lanes.push_back(dev.create_stream());
  std::atomic<int> broken{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      const auto value = static_cast<std::uint8_t>(t + 1);
      for (int r = 0; r < rounds; ++r) {
        const stream s = lanes[static_cast<std::size_t>((t + r) % streams)];
        const std::size_t bytes = kib * static_cast<std::size_t>(1 + (r * 7 + t) % 64);
        void* p = pool.allocate(bytes, s);
        dev.launch_host(s, [p, bytes, value, &broken] {
          std::memset(p, value, bytes);
          std::this_thread::yield();
          if (!holds(p, bytes, value)) ++broken;
        });
        pool.deallocate(p, bytes, s);
      }
    });
  for (std::thread& w : workers) w.join();
  dev.synchronize();
  EXPECT_EQ(broken.load(), 0);
  pool.trim();
  device_pool_statistics stats = pool.statistics();
  EXPECT_EQ(stats.blocks.bytes_in_use, 0u);
  EXPECT_EQ(stats.pending_blocks, 0u);
  EXPECT_EQ(stats.blocks.allocations + stats.same_stream_reuses + stats.cross_stream_reuses,
            std::size_t{threads * rounds});
  for (stream s : lanes) dev.destroy_stream(s);
}

// Copies on four streams read staging buffers that the host filled; a buffer
// reused under a pending copy would hand the copy another thread's bytes.
TEST(pool_concurrency, PinnedPoolNeverHandsOutABufferUnderAPendingCopy) {
  simulated_config config;
  config.capacity = std::size_t{256} << 20;
  simulated_device dev(config);
  pinned_pool staging(dev);
  std::vector<stream> lanes;
  for (int i = 0; i < streams; ++i) lanes.push_back(dev.create_stream());
  std::atomic<int> broken{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      const auto value = static_cast<std::uint8_t>(t + 1);
      const std::size_t bytes = 8 * kib;
      void* block = dev.allocate(bytes);
      for (int r = 0; r < rounds; ++r) {
        const stream s = lanes[static_cast<std::size_t>((t + r) % streams)];
        void* buffer = staging.allocate(bytes);
        std::memset(buffer, value, bytes);
        dev.copy_async(block, buffer, bytes, copy_kind::host_to_device, s);
        dev.launch_host(s, [block, bytes, value, &broken] {
          if (!holds(block, bytes, value)) ++broken;
        });
        staging.deallocate(buffer, bytes, s);
      }
      dev.synchronize();
      dev.deallocate(block);
    });
  for (std::thread& w : workers) w.join();
  dev.synchronize();
  EXPECT_EQ(broken.load(), 0);
  EXPECT_EQ(staging.statistics().bytes_in_use, 0u);
  for (stream s : lanes) dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
