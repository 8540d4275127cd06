// The device pool: bfc over device memory, reserved up front, grown and
// trimmed, with stream-ordered reuse (at once on the freeing stream, on another
// only behind an event wait), rehearsed on an address-only 80 GB device and on
// host-backed memory where queued work writes and checks patterns.
#include "backends.hpp"
#include "byte_checks.hpp"
#include "gate.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/device_pool.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;
constexpr std::size_t gib = 1024 * mib;

// An 80 GB device whose memory is never touched.
simulated_device& big_device() {
  static simulated_config config = [] {
    simulated_config c;
    c.capacity = 80 * gib;
    c.backing = memory_backing::address_only;
    return c;
  }();
  static simulated_device dev(config);
  return dev;
}

// A host-backed device: queued work may write the pool's blocks directly.
simulated_config host_backed(std::size_t capacity) {
  simulated_config c;
  c.capacity = capacity;
  return c;
}

// A pool of exactly `bytes`, never growing.
device_pool_config fixed(std::size_t bytes) {
  device_pool_config config;
  config.reserve_bytes = bytes;
  config.blocks.max_reserved_bytes = bytes;
  return config;
}

TEST(device_pool, ReservesUpFrontAndServesWithoutTheDevice) {
  simulated_device& dev = big_device();
  const std::size_t total = dev.memory().total;
  {
    device_pool pool(dev, fixed(64 * gib));
    EXPECT_EQ(dev.memory().free, total - 64 * gib);
    dev.set_out_of_memory(true);  // every block below comes from the reservation
    const stream s{};
    std::vector<void*> blocks;
    for (int i = 0; i < 1000; ++i) blocks.push_back(pool.allocate(32 * mib, s));
    dev.set_out_of_memory(false);
    device_pool_statistics stats = pool.statistics();
    EXPECT_EQ(stats.blocks.bytes_in_use, 1000 * 32 * mib);
    EXPECT_EQ(stats.blocks.bytes_reserved, 64 * gib);
    EXPECT_EQ(stats.blocks.upstream_allocations, 1u);
    for (void* p : blocks) pool.deallocate(p, 32 * mib, s);
    dev.synchronize(s);
    EXPECT_EQ(pool.trim(), 64 * gib);
    EXPECT_EQ(dev.memory().free, total);
  }
  EXPECT_EQ(dev.memory().free, total);
}

TEST(device_pool, GrowsPastTheReservationAndTrimsBackToWhatItKeeps) {
  simulated_device& dev = big_device();
  const std::size_t total = dev.memory().total;
  device_pool_config config;
  config.reserve_bytes = 8 * gib;
  config.blocks.growth = bfc_growth::fixed;
  device_pool pool(dev, config);
  const stream s{};
  void* first = pool.allocate(6 * gib, s);
  void* second = pool.allocate(6 * gib, s);
  EXPECT_EQ(pool.statistics().blocks.regions, 2u);
  EXPECT_EQ(dev.memory().free, total - 16 * gib);
  pool.deallocate(second, 6 * gib, s);
  dev.synchronize(s);
  EXPECT_EQ(pool.trim(2 * gib), 8 * gib);  // the wholly free region goes
  EXPECT_EQ(dev.memory().free, total - 8 * gib);
  pool.deallocate(first, 6 * gib, s);
  dev.synchronize(s);
  pool.trim();
  EXPECT_EQ(dev.memory().free, total);
}

TEST(device_pool, MoreThanTheDeviceHoldsIsABadAllocNamingTheSize) {
  device_pool pool(big_device());
  try {
    pool.allocate(100 * gib, stream{});
    ADD_FAILURE() << "allocated 100 GB of an 80 GB device";
  } catch (const capacity_error& e) {
    EXPECT_EQ(e.bytes(), 100 * gib);
    EXPECT_NE(std::string(e.what()).find(std::to_string(100 * gib)), std::string::npos);
  }
  EXPECT_THROW(pool.allocate(100 * gib), std::bad_alloc);
}

TEST(device_pool, ZeroBytesIsABlock) {
  device_pool pool(big_device());
  void* p = pool.allocate(0, stream{});
  EXPECT_NE(p, nullptr);
  EXPECT_TRUE(pool.owns(p));
  pool.deallocate(p, 0, stream{});
}

TEST(device_pool, AForeignPointerOrASecondFreeIsAnInvalidArgument) {
  device_pool pool(big_device());
  int local = 0;
  try {
    pool.deallocate(&local, sizeof local, stream{});
    ADD_FAILURE() << "freed a foreign pointer";
  } catch (const device_error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
  }
  void* p = pool.allocate(kib, stream{});
  EXPECT_THROW(pool.deallocate(p, 2 * kib, stream{}), device_error);  // larger than the block
  pool.deallocate(p, kib, stream{});
  EXPECT_THROW(pool.deallocate(p, kib, stream{}), device_error);
  EXPECT_THROW(pool.deallocate(p, kib), device_error);
}

TEST(device_pool, ABlockFreedOnAStreamIsReusedThereAtOnce) {
  simulated_device dev(host_backed(64 * mib));
  device_pool pool(dev, fixed(16 * mib));
  const stream a = dev.create_stream();
  gate held;
  dev.launch_host(a, held.closed());
  void* p = pool.allocate(mib, a);
  pool.deallocate(p, mib, a);
  EXPECT_EQ(pool.statistics().pending_blocks, 1u);
  EXPECT_EQ(pool.allocate(mib, a), p);  // the stream's own order protects it
  EXPECT_EQ(pool.statistics().same_stream_reuses, 1u);
  held.open();
  pool.deallocate(p, mib, a);
  dev.synchronize(a);
  dev.destroy_stream(a);
}

TEST(device_pool, AnotherStreamNeverGetsABlockWhoseWorkIsPending) {
  simulated_device dev(host_backed(64 * mib));
  device_pool pool(dev, fixed(16 * mib));
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  std::atomic<bool> kept{false};
  gate held;
  void* p = pool.allocate(mib, a);
  dev.launch_host(a, held.closed());  // a delayed writer: it runs after the free
  dev.launch_host(a, [p, &kept] {
    std::memset(p, 0xA1, mib);
    kept = holds(p, mib, 0xA1);
  });
  pool.deallocate(p, mib, a);
  void* q = pool.allocate(mib, b);
  EXPECT_NE(q, p);
  dev.launch_host(b, [q] { std::memset(q, 0xB2, mib); });
  held.open();
  dev.synchronize();
  EXPECT_TRUE(kept);
  EXPECT_TRUE(holds(q, mib, 0xB2));
  pool.deallocate(q, mib, b);
  dev.synchronize();
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

// cudaStreamPerThread is one handle and a stream per thread: a block pending
// on one thread's stream is no other thread's to take at once.
TEST(device_pool, PerThreadStreamsOfTwoThreadsAreTwoStreams) {
  simulated_device dev(host_backed(64 * mib));
  device_pool pool(dev, fixed(16 * mib));
  std::atomic<bool> kept{false};
  std::thread([&] {
    void* p = pool.allocate(mib, stream::per_thread());
    dev.launch_kernel(stream::per_thread(), [p, &kept] {
      std::memset(p, 0xA1, mib);
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      kept = holds(p, mib, 0xA1);
    });
    pool.deallocate(p, mib, stream::per_thread());
  }).join();
  std::thread([&] {
    void* q = pool.allocate(mib, stream::per_thread());
    dev.launch_kernel(stream::per_thread(), [q] { std::memset(q, 0xB2, mib); });
    dev.synchronize(stream::per_thread());
    EXPECT_TRUE(holds(q, mib, 0xB2));
    pool.deallocate(q, mib, stream::per_thread());
  }).join();
  dev.synchronize();
  EXPECT_TRUE(kept);
}

TEST(device_pool, AFullPoolHandsAPendingBlockToAnotherStreamBehindAnEventWait) {
  simulated_device dev(host_backed(64 * mib));
  device_pool pool(dev, fixed(mib));
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  std::atomic<bool> kept{false};
  gate held;
  void* p = pool.allocate(mib, a);
  dev.launch_host(a, held.closed());
  dev.launch_host(a, [p, &kept] {
    std::memset(p, 0xA1, mib);
    kept = holds(p, mib, 0xA1);
  });
  pool.deallocate(p, mib, a);
  void* q = pool.allocate(mib, b);  // returns while a is still held: no host wait
  EXPECT_EQ(q, p);
  EXPECT_EQ(pool.statistics().cross_stream_reuses, 1u);
  EXPECT_EQ(pool.statistics().host_waits, 0u);
  dev.launch_host(b, [q] { std::memset(q, 0xB2, mib); });
  held.open();
  dev.synchronize(b);
  EXPECT_TRUE(kept);
  EXPECT_TRUE(holds(q, mib, 0xB2));
  pool.deallocate(q, mib, b);
  dev.synchronize();
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

TEST(device_pool, SynchronousAllocationNeverTakesAPendingBlock) {
  simulated_device dev(host_backed(64 * mib));
  device_pool pool(dev, fixed(4 * mib));
  const stream a = dev.create_stream();
  gate held;
  dev.launch_host(a, held.closed());
  void* p = pool.allocate(mib, a);
  pool.deallocate(p, mib, a);
  void* q = pool.allocate(mib);
  EXPECT_NE(q, p);
  pool.deallocate(q, mib);
  held.open();
  dev.synchronize(a);
  dev.destroy_stream(a);
}

TEST(device_pool, TrimKeepsBlocksWhoseWorkIsPendingThenReturnsThem) {
  simulated_device dev(host_backed(64 * mib));
  const std::size_t total = dev.memory().total;
  device_pool pool(dev, fixed(8 * mib));
  const stream a = dev.create_stream();
  gate held;
  dev.launch_host(a, held.closed());
  pool.deallocate(pool.allocate(mib, a), mib, a);
  EXPECT_EQ(pool.trim(), 0u);
  EXPECT_EQ(dev.memory().free, total - 8 * mib);
  held.open();
  dev.synchronize(a);
  EXPECT_EQ(pool.trim(), 8 * mib);
  EXPECT_EQ(dev.memory().free, total);
  dev.destroy_stream(a);
}

TEST(device_pool, StatisticsAddUp) {
  device_pool pool(big_device(), fixed(gib));
  const stream s{};
  void* a = pool.allocate(100 * mib, s);
  void* b = pool.allocate(200 * mib, s);
  pool.deallocate(a, 100 * mib, s);
  device_pool_statistics stats = pool.statistics();
  EXPECT_EQ(stats.blocks.bytes_in_use + stats.blocks.bytes_free, stats.blocks.bytes_reserved);
  EXPECT_EQ(stats.blocks.allocations, 2u);
  big_device().synchronize(s);
  pool.trim(gib);  // reclaims the completed free without giving regions back
  stats = pool.statistics();
  EXPECT_EQ(stats.pending_bytes, 0u);
  EXPECT_EQ(stats.blocks.bytes_in_use, 200 * mib);
  pool.deallocate(b, 200 * mib, s);
}

template <class Backend>
using device_pool_contract = device_test<Backend>;
TYPED_TEST_SUITE(device_pool_contract, backends, backend_names);

TYPED_TEST(device_pool_contract, CarriesPatternsThroughReusedBlocks) {
  device& dev = *this->dev;
  device_pool pool(dev, fixed(4 * mib));
  const stream s = dev.create_stream();
  pinned_buffer in(dev, 64 * kib), out(dev, 64 * kib);
  for (unsigned round = 0; round < 4; ++round) {
    in.fill(round);
    void* block = pool.allocate(in.size(), s);
    dev.copy_async(block, in.data(), in.size(), copy_kind::host_to_device, s);
    dev.copy_async(out.data(), block, out.size(), copy_kind::device_to_host, s);
    pool.deallocate(block, in.size(), s);
    dev.synchronize(s);
    EXPECT_TRUE(out.holds(round));
  }
  dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
