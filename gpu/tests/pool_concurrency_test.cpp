// The device pool and the pinned pool shared by 8 threads allocating on 4
// streams: every block carries its thread's pattern through queued work, and
// everything is back when the threads are done.
#include "backends.hpp"
#include "byte_checks.hpp"

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
constexpr std::size_t staging_bytes = 8 * kib;

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
// Each thread copies into one device block per stream, so only the staging
// buffers are shared.
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
      std::vector<void*> blocks;
      for (int i = 0; i < streams; ++i) blocks.push_back(dev.allocate(staging_bytes));
      for (int r = 0; r < rounds; ++r) {
        const auto lane = static_cast<std::size_t>((t + r) % streams);
        const stream s = lanes[lane];
        void* block = blocks[lane];
        void* buffer = staging.allocate(staging_bytes);
        std::memset(buffer, value, staging_bytes);
        dev.copy_async(block, buffer, staging_bytes, copy_kind::host_to_device, s);
        dev.launch_host(s, [block, value, &broken] {
          if (!holds(block, staging_bytes, value)) ++broken;
        });
        staging.deallocate(buffer, staging_bytes, s);
      }
      dev.synchronize();
      for (void* block : blocks) dev.deallocate(block);
    });
  for (std::thread& w : workers) w.join();
  dev.synchronize();
  EXPECT_EQ(broken.load(), 0);
  EXPECT_EQ(staging.statistics().bytes_in_use, 0u);
  for (stream s : lanes) dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
