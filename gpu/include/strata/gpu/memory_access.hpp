// strata GPU resources: where a resource's memory may be touched from, and how
// a property type from another library (CCCL's cuda::mr::device_accessible,
// host_accessible) maps onto it, so strata resources answer CCCL's
// get_property without strata depending on CCCL (cccl.hpp adds the mapping).
#ifndef STRATA_GPU_MEMORY_ACCESS_HPP
#define STRATA_GPU_MEMORY_ACCESS_HPP

namespace strata::gpu {

enum class memory_access { none, device, host };

// The access a property type stands for; none unless a bridge says otherwise.
template <class Property>
inline constexpr memory_access property_access = memory_access::none;

}  // namespace strata::gpu

#endif
