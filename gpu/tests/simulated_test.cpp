// What only the simulated device offers: its capacity limit, injected
// out-of-memory, latency, address-only memory, and the pool's release rules.
#include "device_errors.hpp"
#include "gate.hpp"

#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;
constexpr std::size_t gib = 1024 * mib;

simulated_config with_capacity(std::size_t capacity) {
  simulated_config config;
  config.capacity = capacity;
  return config;
}

TEST(simulated_device, CapacityLimitGivesOutOfMemory) {
  simulated_device dev(with_capacity(mib));
  void* first = dev.allocate(512 * kib);
  void* second = dev.allocate_async(512 * kib, stream{});
  EXPECT_EQ(dev.memory().free, 0u);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate(1)); }), errc::out_of_memory);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate_async(1, stream{})); }),
            errc::out_of_memory);
  dev.deallocate(first);
  dev.deallocate_async(second, stream{});
  dev.synchronize();
  EXPECT_EQ(dev.memory().free, mib);
}

TEST(simulated_device, PoolGivesItsCacheBackBeforeFailing) {
  simulated_device dev(with_capacity(mib));
  dev.set_release_threshold(mib);
  void* cached = dev.allocate_async(mib, stream{});
  dev.deallocate_async(cached, stream{});
  dev.synchronize();
  EXPECT_EQ(dev.pool_cached_bytes(), mib);
  void* direct = dev.allocate(mib);  // only fits once the pool lets go
  EXPECT_EQ(dev.pool_cached_bytes(), 0u);
  dev.deallocate(direct);
}

TEST(simulated_device, NthAllocationFailsWhenInjected) {
  simulated_device dev;
  dev.fail_nth_allocation(3);
  void* first = dev.allocate(kib);
  void* second = dev.allocate_async(kib, stream{});
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate_managed(kib)); }), errc::out_of_memory);
  void* fourth = dev.allocate(kib);
  EXPECT_NE(fourth, nullptr);
  dev.deallocate(first);
  dev.deallocate(fourth);
  dev.deallocate_async(second, stream{});
}

TEST(simulated_device, EveryAllocationFailsWhileTheFlagIsSet) {
  simulated_device dev;
  dev.set_out_of_memory(true);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate(kib)); }), errc::out_of_memory);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate_async(kib, stream{})); }),
            errc::out_of_memory);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate_managed(kib)); }), errc::out_of_memory);
  dev.set_out_of_memory(false);
  dev.deallocate(dev.allocate(kib));
}

TEST(simulated_device, MisuseIsAnInvalidArgumentNotOutOfMemory) {
  simulated_device dev;
  void* async = dev.allocate_async(kib, stream{});
  EXPECT_EQ(error_of([&] { dev.deallocate(async); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.deallocate_pinned(async); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.synchronize(stream{&dev}); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.destroy_event(event{&dev}); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.launch_host(stream{}, host_work{}); }), errc::invalid_argument);
  dev.deallocate_async(async, stream{});
  EXPECT_EQ(error_of([&] { dev.deallocate_async(async, stream{}); }), errc::invalid_argument);
}

TEST(simulated_device, LatencyIsSpentOnEveryAllocateAndFree) {
  simulated_config config;
  config.allocate_latency = std::chrono::milliseconds(3);
  config.free_latency = std::chrono::milliseconds(2);
  simulated_device dev(config);
  const auto start = std::chrono::steady_clock::now();
  void* block = dev.allocate(kib);
  const auto allocated = std::chrono::steady_clock::now();
  dev.deallocate(block);
  const auto freed = std::chrono::steady_clock::now();
  EXPECT_GE(allocated - start, config.allocate_latency);
  EXPECT_GE(freed - allocated, config.free_latency);

  // The stream-ordered pool pays it when it takes memory from the device.
  const auto before_async = std::chrono::steady_clock::now();
  void* async = dev.allocate_async(kib, stream{});
  EXPECT_GE(std::chrono::steady_clock::now() - before_async, config.allocate_latency);
  dev.deallocate_async(async, stream{});
}

TEST(simulated_device, WaitingOnANeverRecordedEventDoesNotHoldTheStream) {
  simulated_device dev;
  const stream s = dev.create_stream();
  const event never = dev.create_event();
  dev.wait(s, never);
  dev.destroy_event(never);
  bool ran = false;
  dev.launch_host(s, [&ran] { ran = true; });
  dev.synchronize(s);
  EXPECT_TRUE(ran);
  dev.destroy_stream(s);
}

TEST(simulated_device, AddressOnlyMemoryRehearsesAnEightyGigabyteDevice) {
  simulated_config config;
  config.capacity = 80 * gib;
  config.backing = memory_backing::address_only;
  simulated_device dev(config);
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges;
  for (std::size_t i = 0; i < 79; ++i) {
    const std::size_t bytes = i % 2 == 0 ? gib : gib - 4 * kib;
    ranges.emplace_back(reinterpret_cast<std::uintptr_t>(dev.allocate(bytes)), bytes);
  }
  EXPECT_EQ(dev.memory().total, 80 * gib);
  EXPECT_LT(dev.memory().free, 2 * gib);
  EXPECT_EQ(error_of([&] { static_cast<void>(dev.allocate(2 * gib)); }), errc::out_of_memory);
  std::vector<std::pair<std::uintptr_t, std::size_t>> sorted = ranges;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first);
  // Copies into address-only memory are ordered but move nothing.
  unsigned char bytes[64] = {};
  dev.copy_async(reinterpret_cast<void*>(ranges[0].first), bytes, sizeof bytes,
                 copy_kind::host_to_device, stream{});
  dev.synchronize();
  for (auto& [address, size] : ranges) dev.deallocate(reinterpret_cast<void*>(address));
  void* whole = dev.allocate(80 * gib);  // the freed ranges merged again
  EXPECT_EQ(dev.memory().free, 0u);
  dev.deallocate(whole);
}

TEST(simulated_device, CachedMemoryAboveTheReleaseThresholdGoesBackAtSynchronize) {
  simulated_device dev;
  const std::size_t total = dev.memory().total;
  void* block = dev.allocate_async(mib, stream{});
  dev.deallocate_async(block, stream{});
  EXPECT_EQ(dev.pool_cached_bytes(), mib);
  EXPECT_EQ(dev.memory().free, total - mib);
  dev.synchronize(stream{});  // threshold 0: everything goes back
  EXPECT_EQ(dev.pool_cached_bytes(), 0u);
  EXPECT_EQ(dev.memory().free, total);

  dev.set_release_threshold(4 * mib);
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(dev.allocate_async(2 * mib, stream{}));
  for (void* p : blocks) dev.deallocate_async(p, stream{});
  dev.synchronize();
  EXPECT_LE(dev.pool_cached_bytes(), 4 * mib);
  EXPECT_GT(dev.pool_cached_bytes(), 0u);
  dev.trim_to(0);
  EXPECT_EQ(dev.pool_cached_bytes(), 0u);
}

TEST(simulated_device, TrimKeepsBlocksWhoseFreeHasNotRun) {
  simulated_device dev;
  const stream s = dev.create_stream();
  gate held;
  dev.launch_host(s, held.closed());
  void* block = dev.allocate_async(mib, s);
  dev.deallocate_async(block, s);
  dev.trim_to(0);
  EXPECT_EQ(dev.pool_cached_bytes(), mib);
  held.open();
  dev.synchronize(s);
  EXPECT_EQ(dev.pool_cached_bytes(), 0u);
  dev.destroy_stream(s);
}

TEST(simulated_device, EventOrderIsTransitiveAcrossStreams) {
  simulated_device dev;
  dev.set_release_threshold(64 * mib);
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  const stream c = dev.create_stream();
  const event after_free = dev.create_event();
  const event after_wait = dev.create_event();
  gate held;
  dev.launch_host(a, held.closed());
  void* on_a = dev.allocate_async(mib, a);
  dev.deallocate_async(on_a, a);
  dev.record(after_free, a);
  dev.wait(b, after_free);
  dev.record(after_wait, b);
  dev.wait(c, after_wait);
  void* on_c = dev.allocate_async(mib, c);
  EXPECT_EQ(on_a, on_c);
  dev.deallocate_async(on_c, c);
  held.open();
  dev.synchronize();
  dev.destroy_event(after_free);
  dev.destroy_event(after_wait);
  for (stream s : {a, b, c}) dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
