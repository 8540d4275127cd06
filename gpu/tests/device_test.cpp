// The device API's contract, run on every backend: stream order, events,
// cross-stream waits, copies, stream-ordered reuse, errors and memory info.
#include "backends.hpp"
#include "gate.hpp"
#include "pinned_buffer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

template <class Backend>
using device_contract = device_test<Backend>;
TYPED_TEST_SUITE(device_contract, backends, backend_names);

TYPED_TEST(device_contract, WorkRunsInQueueOrder) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) dev.launch_host(s, [&order, i] { order.push_back(i); });
  dev.synchronize(s);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  dev.destroy_stream(s);
}

TYPED_TEST(device_contract, PatternWrittenByWorkIsSeenByLaterWorkOnTheSameStream) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  pinned_buffer in(dev, 64 * kib), out(dev, 64 * kib);
  void* block = dev.allocate(64 * kib);
  bool seen = false;
  dev.launch_host(s, [&in] { in.fill(3); });
  dev.copy_async(block, in.data(), in.size(), copy_kind::host_to_device, s);
  dev.copy_async(out.data(), block, out.size(), copy_kind::device_to_host, s);
  dev.launch_host(s, [&out, &seen] { seen = out.holds(3); });
  dev.synchronize(s);
  EXPECT_TRUE(seen);
  dev.deallocate(block);
  dev.destroy_stream(s);
}

TYPED_TEST(device_contract, DeviceToDeviceCopyKeepsThePattern) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  pinned_buffer in(dev, 4 * kib), out(dev, 4 * kib);
  in.fill(11);
  void* first = dev.allocate(4 * kib);
  void* second = dev.allocate(4 * kib);
  dev.copy_async(first, in.data(), in.size(), copy_kind::host_to_device, s);
  dev.copy_async(second, first, in.size(), copy_kind::device_to_device, s);
  dev.copy_async(out.data(), second, out.size(), copy_kind::device_to_host, s);
  dev.synchronize(s);
  EXPECT_TRUE(out.holds(11));
  dev.deallocate(first);
  dev.deallocate(second);
  dev.destroy_stream(s);
}

TYPED_TEST(device_contract, WaitOrdersAnotherStreamAfterTheEventWithoutBlockingTheHost) {
  device& dev = *this->dev;
  const stream producer = dev.create_stream();
  const stream consumer = dev.create_stream();
  const event written = dev.create_event();
  pinned_buffer in(dev, 64 * kib), out(dev, 64 * kib);
  void* block = dev.allocate(64 * kib);
  bool seen = false;
  {
    gate held;
    dev.launch_host(producer, held.closed());
    dev.launch_host(producer, [&in] { in.fill(5); });
    dev.copy_async(block, in.data(), in.size(), copy_kind::host_to_device, producer);
    dev.record(written, producer);
    dev.wait(consumer, written);  // returns although the producer is held
    dev.copy_async(out.data(), block, out.size(), copy_kind::device_to_host, consumer);
    dev.launch_host(consumer, [&out, &seen] { seen = out.holds(5); });
    EXPECT_FALSE(dev.query(written));
    held.open();
  }
  dev.synchronize(consumer);
  EXPECT_TRUE(seen);
  EXPECT_TRUE(dev.query(written));
  dev.deallocate(block);
  dev.destroy_event(written);
  dev.destroy_stream(producer);
  dev.destroy_stream(consumer);
}

TYPED_TEST(device_contract, EventCompletesOnlyAfterTheWorkBeforeIt) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  const event done = dev.create_event();
  EXPECT_TRUE(dev.query(done));  // never recorded
  std::atomic<bool> ran{false};
  gate held;
  dev.launch_host(s, held.closed());
  dev.launch_host(s, [&ran] { ran = true; });
  dev.record(done, s);
  EXPECT_FALSE(dev.query(done));
  EXPECT_FALSE(ran);
  held.open();
  dev.synchronize(done);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(dev.query(done));
  dev.destroy_event(done);
  dev.destroy_stream(s);
}

TYPED_TEST(device_contract, AsyncFreeIsReusedAtOnceOnTheSameStream) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  dev.set_release_threshold(64 * mib);
  void* first = dev.allocate_async(mib, s);
  dev.deallocate_async(first, s);
  void* second = dev.allocate_async(mib, s);
  EXPECT_EQ(first, second);
  dev.deallocate_async(second, s);
  dev.synchronize(s);
  dev.trim_to(0);
  dev.destroy_stream(s);
}

TYPED_TEST(device_contract, AsyncFreeReachesAnotherStreamOnlyAfterItsWorkRan) {
  device& dev = *this->dev;
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  dev.set_release_threshold(64 * mib);
  pinned_buffer first(dev, mib), second(dev, mib), out(dev, mib);
  first.fill(1);
  second.fill(2);
  void* on_a = nullptr;
  void* on_b = nullptr;
  {
    gate held;
    on_a = dev.allocate_async(mib, a);
    dev.copy_async(on_a, first.data(), mib, copy_kind::host_to_device, a);
    dev.launch_host(a, held.closed());
    dev.copy_async(out.data(), on_a, mib, copy_kind::device_to_host, a);
    dev.deallocate_async(on_a, a);
    // Handing on_a to b now would let b's copy overwrite it before a reads it.
    on_b = dev.allocate_async(mib, b);
    dev.copy_async(on_b, second.data(), mib, copy_kind::host_to_device, b);
    if (this->simulated()) {
      EXPECT_NE(on_a, on_b);
    }
    held.open();
  }
  dev.synchronize();
  EXPECT_TRUE(out.holds(1));
  dev.deallocate_async(on_b, b);
  dev.synchronize();
  dev.trim_to(0);
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

TYPED_TEST(device_contract, AsyncFreeIsReusedByAStreamThatWaitedOnAnEventAfterIt) {
  device& dev = *this->dev;
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  const event freed = dev.create_event();
  dev.set_release_threshold(64 * mib);
  {
    gate held;
    dev.launch_host(a, held.closed());
    void* on_a = dev.allocate_async(mib, a);
    dev.deallocate_async(on_a, a);
    dev.record(freed, a);
    dev.wait(b, freed);
    void* on_b = dev.allocate_async(mib, b);
    EXPECT_EQ(on_a, on_b);
    dev.deallocate_async(on_b, b);
    held.open();
  }
  dev.synchronize();
  dev.trim_to(0);
  dev.destroy_event(freed);
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

TYPED_TEST(device_contract, RequestsBeyondTheDeviceAreOutOfMemory) {
  device& dev = *this->dev;
  const std::size_t beyond = dev.memory().total + (std::size_t{1} << 30);
  try {
    static_cast<void>(dev.allocate(beyond));
    FAIL() << "allocate beyond the device succeeded";
  } catch (const device_error& error) {
    EXPECT_EQ(error.code(), errc::out_of_memory) << error.what();
    EXPECT_TRUE(error.is_out_of_memory());
  }
  try {
    static_cast<void>(dev.allocate_async(beyond, stream{}));
    FAIL() << "allocate_async beyond the device succeeded";
  } catch (const device_error& error) {
    EXPECT_EQ(error.code(), errc::out_of_memory) << error.what();
  }
}

TYPED_TEST(device_contract, ForeignPointersAndHandlesAreInvalidArguments) {
  device& dev = *this->dev;
  int local = 0;
  try {
    dev.deallocate(&local);
    FAIL() << "deallocate of a stack address succeeded";
  } catch (const device_error& error) {
    EXPECT_EQ(error.code(), errc::invalid_argument) << error.what();
  }
  try {
    dev.destroy_stream(stream{});
    FAIL() << "destroying the default stream succeeded";
  } catch (const device_error& error) {
    EXPECT_EQ(error.code(), errc::invalid_argument) << error.what();
  }
}

TYPED_TEST(device_contract, MemoryInfoAccountsForAllocations) {
  device& dev = *this->dev;
  const memory_info before = dev.memory();
  EXPECT_GT(before.total, 0u);
  EXPECT_LE(before.free, before.total);
  void* block = dev.allocate(64 * mib);
  EXPECT_LE(dev.memory().free + 64 * mib, before.free);
  dev.deallocate(block);
}

TYPED_TEST(device_contract, PinnedAndManagedMemoryAreHostAccessible) {
  device& dev = *this->dev;
  auto* pinned = static_cast<unsigned char*>(dev.allocate_pinned(4 * kib));
  auto* managed = static_cast<unsigned char*>(dev.allocate_managed(4 * kib));
  for (std::size_t i = 0; i < 4 * kib; ++i) pinned[i] = managed[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(pinned[4 * kib - 1], managed[4 * kib - 1]);
  dev.deallocate_managed(managed);
  dev.deallocate_pinned(pinned);
}

}  // namespace
}  // namespace strata::gpu::testing
