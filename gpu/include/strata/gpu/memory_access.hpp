// strata GPU resources: where a resource's memory may be touched from, and how
// a property type from another library (CCCL's cuda::mr::device_accessible,
// host_accessible) maps onto it, so strata resources answer CCCL's
// get_property without strata depending on CCCL (cccl.hpp adds the mapping).
#ifndef STRATA_GPU_MEMORY_ACCESS_HPP
#define STRATA_GPU_MEMORY_ACCESS_HPP

namespace strata::gpu {

// managed: both the host and the device (unified memory); pinned: host
// memory the device reaches too (page-locked, mapped for the device).
enum class memory_access { none, device, host, managed, pinned };

// Whether memory a resource hands out offers the access a property asks for.
constexpr bool offers(memory_access resource, memory_access wanted) noexcept {
  if (wanted == memory_access::none) return false;
  const bool both = resource == memory_access::managed || resource == memory_access::pinned;
  return resource == wanted ||
         (both && (wanted == memory_access::device || wanted == memory_access::host));
}

// The access a property type stands for; none unless a bridge says otherwise.
template <class Property>
inline constexpr memory_access property_access = memory_access::none;

}  // namespace strata::gpu

#endif
