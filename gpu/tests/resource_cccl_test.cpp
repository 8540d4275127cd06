// Conformance with CCCL's cuda::mr concepts, checked at compile time: built
// only where CMake found CCCL's headers (they ship with the CUDA toolkit).
#include <strata/gpu/cccl.hpp>

#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/managed_pool.hpp>
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

TEST(cccl, ResourceRefTakesAStrataResource) {
  simulated_device dev;
  async_resource pooled(dev);
  cuda::mr::async_resource_ref<device_accessible> ref(pooled);
  void* p = ref.allocate(1024, 256);
  EXPECT_NE(p, nullptr);
  ref.deallocate(p, 1024, 256);
}

}  // namespace
}  // namespace strata::gpu
