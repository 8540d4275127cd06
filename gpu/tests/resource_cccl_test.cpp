// Conformance with CCCL's cuda::mr concepts, checked at compile time: built
// only where CMake found CCCL's headers (they ship with the CUDA toolkit).
#include <strata/gpu/cccl.hpp>

#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/managed_pool.hpp>
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

namespace strata::gpu {
namespace {

using cuda::mr::device_accessible;
using cuda::mr::host_accessible;

static_assert(cuda::mr::resource<device_resource>);
static_assert(cuda::mr::async_resource<device_resource>);
static_assert(cuda::mr::async_resource<async_resource>);
static_assert(cuda::mr::async_resource<device_pool>);
static_assert(cuda::mr::async_resource_with<device_resource, device_accessible>);
static_assert(cuda::mr::async_resource_with<async_resource, device_accessible>);
static_assert(cuda::mr::async_resource_with<device_pool, device_accessible>);
static_assert(!cuda::has_property<device_pool, host_accessible>);
static_assert(!cuda::has_property<async_resource, host_accessible>);
// Managed memory is both: either side may touch it.
static_assert(cuda::mr::async_resource_with<managed_pool, device_accessible, host_accessible>);
static_assert(cuda::mr::async_resource_with<caching_allocator, device_accessible>);
static_assert(!cuda::has_property<caching_allocator, host_accessible>);
// Pinned memory is host memory the device reaches: both, synchronous only.
static_assert(cuda::mr::resource_with<pinned_pool, host_accessible, device_accessible>);

TEST(cccl, ResourceRefTakesAStrataResource) {
  simulated_device dev;
  async_resource pooled(dev);
  cuda::mr::async_resource_ref<device_accessible> ref(pooled);
  void* p = ref.allocate(1024, 256);
  EXPECT_NE(p, nullptr);
  ref.deallocate(p, 1024, 256);
}

TEST(cccl, ResourceRefsTakeTheCachingAllocatorAndThePinnedPool) {
  simulated_device dev;
  caching_allocator cache(dev);
  cuda::mr::async_resource_ref<device_accessible> device_ref(cache);
  void* p = device_ref.allocate(4096, 256);
  EXPECT_EQ(cache.stats().all.allocation.current, 1);
  device_ref.deallocate(p, 4096, 256);
  pinned_pool staging(dev);
  cuda::mr::resource_ref<host_accessible, device_accessible> pinned_ref(staging);
  void* q = pinned_ref.allocate(100, 64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 4096, 0u);
  pinned_ref.deallocate(q, 100, 64);
  EXPECT_EQ(staging.statistics().bytes_in_use, 0u);
}

}  // namespace
}  // namespace strata::gpu
