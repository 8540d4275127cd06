// The managed-memory pool (seed 002's unified allocator): reuse keeps
// residency, the prefetch policy and requests move pages, stream order holds
// freed blocks back from other streams, statistics add up, bad input is
// refused, and eight threads share one pool.
#include "backends.hpp"
#include "byte_checks.hpp"
#include "gate.hpp"

#include <strata/gpu/managed_pool.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;
constexpr std::size_t page = 64 * kib;

TEST(managed_pool, ReuseHandsBackMemoryWithTheResidencyItHad) {
  simulated_device dev(with_migration_costs());
  managed_pool pool(dev);
  const stream s{};
  void* p = pool.allocate(mib, s);
  dev.memset_async(p, 9, mib, s);  // the GPU writes it: its pages move there
  pool.deallocate(p, mib, s);
  void* again = pool.allocate(mib, s);
  EXPECT_EQ(again, p);
  dev.synchronize();
  for (std::size_t at = 0; at < mib; at += page)
    EXPECT_EQ(dev.managed_residency(static_cast<char*>(again) + at), residency::device);
  const std::uint64_t faults = dev.managed_stats().faulted_to_device;
  dev.memset_async(again, 1, mib, s);  // already there: no new faults
  dev.synchronize();
  EXPECT_EQ(dev.managed_stats().faulted_to_device, faults);
  pool.deallocate(again, mib, s);
  EXPECT_EQ(dev.managed_stats().faulted_to_device, mib / page);
}

TEST(managed_pool, ThePrefetchPolicyMovesEveryBlockOnItsStream) {
  simulated_device dev(with_migration_costs());
  managed_pool_config config;
  config.prefetch = prefetch_policy::to_device;
  managed_pool pool(dev, config);
  const stream s = dev.create_stream();
  void* p = pool.allocate(4 * mib, s);
  dev.memset_async(p, 3, 4 * mib, s);
  dev.synchronize(s);
  const managed_statistics moved = dev.managed_stats();
  EXPECT_EQ(moved.prefetched_to_device, 4 * mib / page);
  EXPECT_EQ(moved.faulted_to_device, 0u);  // the GPU found every page at home
  EXPECT_EQ(pool.statistics().prefetches, 1u);
  EXPECT_EQ(pool.statistics().prefetched_bytes, 4 * mib);
  pool.prefetch(p, 4 * mib, memory_location::host, s);
  dev.synchronize(s);
  dev.host_access(p, 4 * mib);
  EXPECT_EQ(dev.managed_stats().faulted_to_host, 0u);
  EXPECT_TRUE(holds(p, 4 * mib, 3));
  pool.deallocate(p, 4 * mib, s);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(managed_pool, PrefetchSavesTheFaultsTheModelCharges) {
  simulated_device dev(with_migration_costs());
  managed_pool plain(dev);
  managed_pool_config ahead;
  ahead.prefetch = prefetch_policy::to_device;
  managed_pool prefetching(dev, ahead);
  const stream s{};
  void* a = plain.allocate(8 * mib, s);
  dev.host_access(a, 8 * mib);
  dev.memset_async(a, 1, 8 * mib, s);
  dev.synchronize();
  const auto faulting = dev.managed_stats().charged;
  void* b = prefetching.allocate(8 * mib, s);
  dev.memset_async(b, 1, 8 * mib, s);
  dev.synchronize();
  const auto prefetched = dev.managed_stats().charged - faulting;
  EXPECT_EQ(faulting, (8 * mib / page) * std::chrono::microseconds(10));
  EXPECT_EQ(prefetched, (8 * mib / page) * std::chrono::microseconds(1));
  plain.deallocate(a, 8 * mib, s);
  prefetching.deallocate(b, 8 * mib, s);
}

TEST(managed_pool, RegionHintsReachEveryBlock) {
  simulated_device dev(with_migration_costs());
  managed_pool_config config;
  config.hints.preferred_location = memory_location::host;
  managed_pool pool(dev, config);
  void* p = pool.allocate(2 * page, stream{});
  dev.host_access(p, 2 * page);
  dev.memset_async(p, 1, 2 * page, stream{});
  dev.synchronize();
  EXPECT_EQ(dev.managed_residency(p), residency::host);
  EXPECT_EQ(dev.managed_stats().remote_accesses, 2u);
  pool.advise(p, page, memory_advice::unset_preferred_location, memory_location::host);
  EXPECT_EQ(pool.statistics().advice_calls, 1u);
  pool.deallocate(p, 2 * page, stream{});
}

TEST(managed_pool, ABlockFreedUnderPendingWorkWaitsForItBeforeAnotherStreamGetsIt) {
  simulated_device dev;
  managed_pool_config config;
  config.reserve_bytes = mib;
  config.capacity = mib;  // one block at a time: the second stream must wait for this one
  managed_pool pool(dev, config);
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  std::atomic<bool> pattern_intact{false};
  {
    gate held;
    auto* p = static_cast<std::uint8_t*>(pool.allocate(mib, a));
    dev.launch_host(a, held.closed());
    dev.memset_async(p, 0xab, mib, a);
    dev.launch_host(a, [&, p] { pattern_intact = holds(p, mib, 0xab); });
    pool.deallocate(p, mib, a);
    void* q = pool.allocate(mib, b);  // b is made to wait on a's work; the host goes on
    EXPECT_EQ(q, p);
    dev.memset_async(q, 0xcd, mib, b);
    held.open();
    dev.synchronize(b);
    EXPECT_TRUE(pattern_intact.load());
    dev.host_access(q, mib);
    EXPECT_TRUE(holds(q, mib, 0xcd));
    pool.deallocate(q, mib, b);
  }
  dev.synchronize();
  EXPECT_EQ(pool.statistics().pool.cross_stream_reuses, 1u);
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

TEST(managed_pool, StatisticsAddUpAndTrimGivesRegionsBack) {
  simulated_device dev;
  managed_pool pool(dev);
  const stream s{};
  std::vector<std::pair<void*, std::size_t>> live;
  std::mt19937 rng(7);
  std::size_t requested = 0;
  for (int i = 0; i < 200; ++i) {
    const std::size_t bytes = 256 + rng() % (300 * kib);
    live.emplace_back(pool.allocate_sync(bytes), bytes);
    requested += bytes;
  }
  managed_pool_statistics stats = pool.statistics();
  EXPECT_GE(stats.pool.blocks.bytes_in_use, requested);
  EXPECT_EQ(stats.pool.blocks.chunks_in_use, 200u);
  EXPECT_EQ(stats.pool.blocks.bytes_in_use + stats.pool.blocks.bytes_free,
            stats.pool.blocks.bytes_reserved);
  EXPECT_EQ(stats.pool.blocks.allocations, 200u);
  for (auto [p, bytes] : live) pool.deallocate(p, bytes, s);
  dev.synchronize();
  EXPECT_EQ(pool.trim(), stats.pool.blocks.bytes_reserved);
  stats = pool.statistics();
  EXPECT_EQ(stats.pool.blocks.bytes_reserved, 0u);
  EXPECT_EQ(stats.pool.pending_bytes, 0u);
}

TEST(managed_pool, BadInputGetsAClearAnswer) {
  simulated_device dev;
  managed_pool_config config;
  config.capacity = 4 * mib;
  managed_pool pool(dev, config);
  EXPECT_EQ(pool.allocate(0, stream{}), nullptr);
  EXPECT_EQ(pool.allocate_sync(0), nullptr);
  pool.deallocate(nullptr, 0, stream{});
  EXPECT_THROW(pool.allocate(8 * mib, stream{}), std::bad_alloc);
  int foreign = 0;
  EXPECT_THROW(pool.deallocate(&foreign, 4, stream{}), device_error);
  void* p = pool.allocate(mib, stream{});
  EXPECT_THROW(pool.prefetch(&foreign, 4, memory_location::device, stream{}), device_error);
  EXPECT_THROW(pool.prefetch(p, 2 * mib, memory_location::device, stream{}), device_error);
  EXPECT_THROW(pool.advise(static_cast<char*>(p) + 8, 4, memory_advice::set_read_mostly,
                           memory_location::device),
               device_error);
  EXPECT_THROW(pool.deallocate(p, 2 * mib, stream{}), device_error);
  pool.deallocate(p, mib, stream{});
  try {
    static_cast<void>(pool.allocate(8 * mib, stream{}));
    FAIL() << "a request above the capacity was served";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("8388608"), std::string::npos) << e.what();
  }
}

TEST(managed_pool, EightThreadsOnFourStreamsKeepTheirBlocksApart) {
  simulated_device dev;
  managed_pool pool(dev);
  std::vector<stream> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(dev.create_stream());
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const stream s = streams[t % 4];
      std::mt19937 rng(t);
      for (int i = 0; i < 200; ++i) {
        const std::size_t bytes = 256 + rng() % (64 * kib);
        auto* p = static_cast<std::uint8_t*>(pool.allocate(bytes, s));
        const auto mark = static_cast<std::uint8_t>(t * 31 + i);
        dev.memset_async(p, mark, bytes, s);
        dev.launch_host(s, [&corrupted, p, bytes, mark] {
          if (!holds(p, bytes, mark)) corrupted.fetch_add(1);
        });
        pool.deallocate(p, bytes, s);
      }
    });
  for (auto& t : threads) t.join();
  dev.synchronize();
  EXPECT_EQ(corrupted.load(), 0);
  const managed_pool_statistics stats = pool.statistics();
  EXPECT_EQ(stats.pool.blocks.chunks_in_use, stats.pool.pending_blocks);
  pool.trim();
  for (stream s : streams) dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
