// The direct and stream-ordered device resources, run on every backend: the
// spellings CCCL's concepts expect, patterns through the memory, alignment,
// zero and oversized requests, and the pool's trim.
#include "backends.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>

#include <gtest/gtest.h>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

static_assert(device_memory_resource<device_resource>);
static_assert(device_memory_resource<async_resource>);
static_assert(device_memory_resource<device_pool>);

template <class Backend>
using resource_contract = device_test<Backend>;
TYPED_TEST_SUITE(resource_contract, backends, backend_names);

// A pattern through a block of `resource`, allocated and freed on stream s.
template <class Resource>
bool round_trips(device& dev, Resource& resource, stream s) {
  pinned_buffer in(dev, 16 * kib), out(dev, 16 * kib);
  in.fill(9);
  void* block = resource.allocate(in.size(), s);
  dev.copy_async(block, in.data(), in.size(), copy_kind::host_to_device, s);
  dev.copy_async(out.data(), block, out.size(), copy_kind::device_to_host, s);
  resource.deallocate(block, in.size(), s);
  dev.synchronize(s);
  return out.holds(9);
}

TYPED_TEST(resource_contract, DirectResourceCarriesAPatternOnAStream) {
  device_resource direct(*this->dev);
  const stream s = this->dev->create_stream();
  EXPECT_TRUE(round_trips(*this->dev, direct, s));
  this->dev->destroy_stream(s);
}

TYPED_TEST(resource_contract, AsyncResourceCarriesAPatternOnAStream) {
  async_resource pooled(*this->dev);
  const stream s = this->dev->create_stream();
  EXPECT_TRUE(round_trips(*this->dev, pooled, s));
  this->dev->destroy_stream(s);
}

TYPED_TEST(resource_contract, EverySpellingReachesTheSameMemory) {
  async_resource pooled(*this->dev);
  const stream s = this->dev->create_stream();
  void* a = pooled.allocate(kib, s);
  void* b = pooled.allocate(kib, 256, s);
  void* c = pooled.allocate(s, kib);
  void* d = pooled.allocate_async(kib, 256, s);
  void* e = pooled.allocate(kib);
  void* f = pooled.allocate_sync(kib);
  for (void* p : {a, b, c, d, e, f}) EXPECT_NE(p, nullptr);
  pooled.deallocate(a, kib, s);
  pooled.deallocate(b, kib, 256, s);
  pooled.deallocate(s, c, kib);
  pooled.deallocate_async(d, kib, 256, s);
  pooled.deallocate(e, kib);
  pooled.deallocate_sync(f, kib);
  this->dev->synchronize(s);
  this->dev->destroy_stream(s);
}

TYPED_TEST(resource_contract, ZeroBytesIsAValidRequest) {
  device_resource direct(*this->dev);
  async_resource pooled(*this->dev);
  const stream s = this->dev->create_stream();
  direct.deallocate(direct.allocate(0, s), 0, s);
  pooled.deallocate(pooled.allocate(0, s), 0, s);
  this->dev->synchronize(s);
  this->dev->destroy_stream(s);
}

TYPED_TEST(resource_contract, AlignmentAboveTheDevicesIsAnInvalidArgument) {
  device_resource direct(*this->dev);
  async_resource pooled(*this->dev);
  for (std::size_t alignment : {std::size_t{512}, std::size_t{3}, std::size_t{0}}) {
    try {
      direct.allocate(kib, alignment);
      ADD_FAILURE() << "alignment " << alignment << " accepted";
    } catch (const device_error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
    }
    EXPECT_THROW(pooled.allocate(kib, alignment, stream{}), device_error);
  }
}

TYPED_TEST(resource_contract, MoreThanTheDeviceHoldsIsOutOfMemory) {
  device_resource direct(*this->dev);
  async_resource pooled(*this->dev);
  const std::size_t too_much = this->dev->memory().total * 2;
  try {
    direct.allocate(too_much);
    ADD_FAILURE() << "allocated twice the device";
  } catch (const device_error& e) {
    EXPECT_TRUE(e.is_out_of_memory());
  }
  EXPECT_THROW(pooled.allocate(too_much, stream{}), device_error);
}

TYPED_TEST(resource_contract, ResourcesOnOneDeviceAreEqual) {
  EXPECT_EQ(device_resource(*this->dev), device_resource(*this->dev));
  EXPECT_EQ(async_resource(*this->dev), async_resource(*this->dev));
}

TEST(async_resource, TrimGivesCachedMemoryBackToTheDevice) {
  simulated_device dev;
  const std::size_t free_before = dev.memory().free;
  async_resource pooled(dev, std::size_t{64} << 20);
  const stream s = dev.create_stream();
  pooled.deallocate(pooled.allocate(std::size_t{8} << 20, s), std::size_t{8} << 20, s);
  dev.synchronize(s);
  EXPECT_LT(dev.memory().free, free_before);
  pooled.trim();
  EXPECT_EQ(dev.memory().free, free_before);
  dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
