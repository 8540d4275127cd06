// Transfer accounting, run on every backend: bytes per direction add up once
// the copies complete, and copies still queued are submitted, not counted.
#include "backends.hpp"
#include "gate.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/transfer_meter.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

template <class Backend>
using transfer_meter_contract = device_test<Backend>;
TYPED_TEST_SUITE(transfer_meter_contract, backends, backend_names);

TYPED_TEST(transfer_meter_contract, BytesAddUpPerDirection) {
  device& dev = *this->dev;
  transfer_meter meter(dev);
  const stream s = dev.create_stream();
  pinned_buffer host(dev, 64 * kib);
  host.fill(4);
  void* first = dev.allocate(64 * kib);
  void* second = dev.allocate(64 * kib);
  for (std::size_t bytes : {kib, 16 * kib, 64 * kib})
    meter.copy(first, host.data(), bytes, copy_kind::host_to_device, s);
  meter.copy(second, first, 64 * kib, copy_kind::device_to_device, s);
  for (std::size_t bytes : {8 * kib, 64 * kib})
    meter.copy(host.data(), second, bytes, copy_kind::device_to_host, s);
  dev.synchronize(s);
  EXPECT_TRUE(host.holds(4));
  const transfer_totals h2d = meter.totals(copy_kind::host_to_device);
  const transfer_totals d2d = meter.totals(copy_kind::device_to_device);
  const transfer_totals d2h = meter.totals(copy_kind::device_to_host);
  EXPECT_EQ(h2d.bytes, 81 * kib);
  EXPECT_EQ(h2d.copies, 3u);
  EXPECT_EQ(d2d.bytes, 64 * kib);
  EXPECT_EQ(d2d.copies, 1u);
  EXPECT_EQ(d2h.bytes, 72 * kib);
  EXPECT_EQ(d2h.copies, 2u);
  EXPECT_EQ(meter.submitted(copy_kind::device_to_host), 72 * kib);
  // The time is the device's measure of the copies themselves: positive, and
  // the bandwidth is bytes over it.
  EXPECT_GT(h2d.busy_ns, 0u);
  EXPECT_GT(d2h.busy_ns, 0u);
  EXPECT_DOUBLE_EQ(h2d.bandwidth(),
                   static_cast<double>(h2d.bytes) * 1e9 / static_cast<double>(h2d.busy_ns));
  dev.deallocate(first);
  dev.deallocate(second);
  dev.destroy_stream(s);
}

// The device times the copy with events: a host function blocking on another
// stream (CUDA runs all host functions on one thread) neither holds the
// metered stream nor delays the count.
TYPED_TEST(transfer_meter_contract, ACopyIsTimedWithoutHostFunctions) {
  device& dev = *this->dev;
  transfer_meter meter(dev);
  const stream busy = dev.create_stream();
  const stream copying = dev.create_stream();
  pinned_buffer host(dev, 16 * kib);
  void* block = dev.allocate(16 * kib);
  std::atomic<bool> host_function_done{false};
  dev.launch_host(busy, [&host_function_done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    host_function_done = true;
  });
  meter.copy(block, host.data(), 16 * kib, copy_kind::host_to_device, copying);
  dev.synchronize(copying);
  EXPECT_EQ(meter.totals(copy_kind::host_to_device).copies, 1u);
  EXPECT_FALSE(host_function_done);
  dev.synchronize(busy);
  dev.deallocate(block);
  dev.destroy_stream(busy);
  dev.destroy_stream(copying);
}

TYPED_TEST(transfer_meter_contract, QueuedCopiesAreSubmittedButNotYetCounted) {
  device& dev = *this->dev;
  transfer_meter meter(dev);
  const stream s = dev.create_stream();
  pinned_buffer host(dev, 4 * kib);
  void* block = dev.allocate(4 * kib);
  {
    gate held;
    dev.launch_host(s, held.closed());
    meter.copy(block, host.data(), 4 * kib, copy_kind::host_to_device, s);
    EXPECT_EQ(meter.submitted(copy_kind::host_to_device), 4 * kib);
    EXPECT_EQ(meter.totals(copy_kind::host_to_device).bytes, 0u);
  }
  dev.synchronize(s);
  EXPECT_EQ(meter.totals(copy_kind::host_to_device).bytes, 4 * kib);
  dev.deallocate(block);
  dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
