// Transfer accounting, run on every backend: bytes per direction add up once
// the copies complete, and copies still queued are submitted, not counted.
#include "backends.hpp"
#include "gate.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/transfer_meter.hpp>

#include <gtest/gtest.h>

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
  EXPECT_GE(h2d.bandwidth(), 0.0);
  dev.deallocate(first);
  dev.deallocate(second);
  dev.destroy_stream(s);
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
