// The pinned host pool, run on every backend: a buffer is never handed out
// again while a copy queued on a stream may still read it, buffers released
// without a stream come back at once, and bad input is refused.
#include "backends.hpp"
#include "gate.hpp"

#include <strata/gpu/pinned_pool.hpp>

#include <gtest/gtest.h>

#include <cstring>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

template <class Backend>
using pinned_pool_contract = device_test<Backend>;
TYPED_TEST_SUITE(pinned_pool_contract, backends, backend_names);

// While a host function holds the stream nothing may allocate or free pinned
// memory (cudaMallocHost and cudaFreeHost may wait for the device): the spare
// buffer is made before, and released idle behind the pending one.
TYPED_TEST(pinned_pool_contract, NeverReusesABufferUnderAPendingCopy) {
  device& dev = *this->dev;
  pinned_pool staging(dev);
  const stream s = dev.create_stream();
  void* block = dev.allocate(4 * kib);
  void* buffer = staging.allocate(4 * kib);
  void* spare = staging.allocate(4 * kib);
  std::memset(buffer, 0x5A, 4 * kib);
  {
    gate held;
    dev.launch_host(s, held.closed());  // the copy waits behind it
    dev.copy_async(block, buffer, 4 * kib, copy_kind::host_to_device, s);
    staging.deallocate(buffer, 4 * kib, s);
    staging.deallocate(spare, 4 * kib);
    EXPECT_EQ(staging.statistics().bytes_pending, 4 * kib);
    void* other = staging.allocate(4 * kib);
    EXPECT_EQ(other, spare);
    EXPECT_EQ(staging.statistics().skipped_pending, 1u);
    EXPECT_EQ(staging.statistics().misses, 2u);
    staging.deallocate(other, 4 * kib);
  }
  dev.synchronize(s);
  void* again = staging.allocate(4 * kib);
  void* next = staging.allocate(4 * kib);
  EXPECT_TRUE(again == buffer || next == buffer);
  EXPECT_EQ(staging.statistics().hits, 3u);
  staging.deallocate(again, 4 * kib);
  staging.deallocate(next, 4 * kib);
  dev.deallocate(block);
  dev.destroy_stream(s);
}

TYPED_TEST(pinned_pool_contract, ABufferReleasedWithoutAStreamIsReusedAtOnce) {
  pinned_pool staging(*this->dev);
  void* buffer = staging.allocate(10 * kib);
  staging.deallocate(buffer, 10 * kib);
  EXPECT_EQ(staging.allocate(16 * kib), buffer);  // both round to 16 KiB
  pinned_pool_statistics stats = staging.statistics();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.bytes_in_use, 16 * kib);
  staging.deallocate(buffer, 16 * kib);
}

// With the stream held, release_idle may free nothing (cudaFreeHost may wait
// for the device): the held buffer stays, and goes once its stream ran.
TYPED_TEST(pinned_pool_contract, ReleaseIdleFreesOnlyBuffersWithNothingPending) {
  device& dev = *this->dev;
  pinned_pool staging(dev);
  const stream s = dev.create_stream();
  void* idle = staging.allocate(4 * kib);
  void* copied = staging.allocate(4 * kib);
  staging.deallocate(idle, 4 * kib);
  EXPECT_EQ(staging.release_idle(), 4 * kib);
  {
    gate held;
    dev.launch_host(s, held.closed());
    staging.deallocate(copied, 4 * kib, s);
    EXPECT_EQ(staging.release_idle(), 0u);
    EXPECT_EQ(staging.statistics().bytes_cached, 4 * kib);
  }
  dev.synchronize(s);
  EXPECT_EQ(staging.release_idle(), 4 * kib);
  EXPECT_EQ(staging.statistics().bytes_cached, 0u);
  dev.destroy_stream(s);
}

TYPED_TEST(pinned_pool_contract, BadInputIsRefused) {
  pinned_pool staging(*this->dev);
  void* zero = staging.allocate(0);
  EXPECT_NE(zero, nullptr);
  staging.deallocate(zero, 0);
  int local = 0;
  try {
    staging.deallocate(&local, sizeof local);
    ADD_FAILURE() << "freed a foreign pointer";
  } catch (const device_error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
  }
  EXPECT_THROW(staging.deallocate(zero, 0), device_error);  // already back
  try {
    staging.allocate(~std::size_t{0});
    ADD_FAILURE() << "allocated the address space";
  } catch (const device_error& e) {
    EXPECT_TRUE(e.is_out_of_memory());
    EXPECT_NE(std::string(e.what()).find(std::to_string(~std::size_t{0})), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::gpu::testing
