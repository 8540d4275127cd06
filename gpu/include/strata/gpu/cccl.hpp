// strata GPU resources with CCCL: include this (with CCCL's headers on the
// include path) so strata's device resources answer cuda::mr::get_property for
// device_accessible and host_accessible and so satisfy cuda::mr's
// resource_with / async_resource_with concepts. The rest of strata never
// includes CCCL.
#ifndef STRATA_GPU_CCCL_HPP
#define STRATA_GPU_CCCL_HPP

#ifndef LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#endif
#include <cuda/memory_resource>
#include <strata/gpu/memory_access.hpp>

namespace strata::gpu {

template <>
inline constexpr memory_access property_access<cuda::mr::device_accessible> = memory_access::device;
template <>
inline constexpr memory_access property_access<cuda::mr::host_accessible> = memory_access::host;

}  // namespace strata::gpu

#endif
