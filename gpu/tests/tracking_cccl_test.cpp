// The GPU tracking adaptor as a CCCL cuda::mr resource, checked at compile
// time and through a resource_ref: built only where CMake found CCCL.
#include <strata/gpu/cccl.hpp>

#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/gpu/tracking.hpp>

#include <gtest/gtest.h>

namespace strata::gpu {
namespace {

using cuda::mr::device_accessible;
using cuda::mr::host_accessible;

static_assert(cuda::mr::resource<tracking<device_pool>>);
static_assert(cuda::mr::async_resource<tracking<device_pool>>);
static_assert(cuda::mr::async_resource_with<tracking<device_pool>, device_accessible>);
static_assert(!cuda::has_property<tracking<device_pool>, host_accessible>);

TEST(gpu_tracking_cccl, ResourceRefRecordsTheBlock) {
  simulated_device dev;
  tracking<device_pool> pool(dev);
  cuda::mr::async_resource_ref<device_accessible> ref(pool);
  void* p = ref.allocate(1024, 256);
  EXPECT_EQ(pool.live_blocks(), 1u);
  ref.deallocate(p, 1024, 256);
  EXPECT_EQ(pool.live_blocks(), 0u);
}

}  // namespace
}  // namespace strata::gpu
