// The CUDA driver's virtual-memory calls (cuMemAddressReserve, cuMemCreate,
// cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree,
// cuMemGetAllocationGranularity), reached through the runtime's driver entry
// points so strata never links libcuda: the runtime loads the driver anyway.
// Each call acts on the calling thread's current context (the caller binds
// the device) and throws device_error when the driver refuses.
#ifndef STRATA_GPU_SRC_CUDA_DRIVER_MEMORY_HPP
#define STRATA_GPU_SRC_CUDA_DRIVER_MEMORY_HPP

#include <strata/gpu/device.hpp>

#include <cstddef>

namespace strata::gpu::cuda {

// The minimum granularity of physical memory on device `ordinal`.
std::size_t granularity(int ordinal);
void* reserve(std::size_t bytes);
void release(void* base, std::size_t bytes);
// Pinned device memory of `bytes` on device `ordinal`.
physical_memory create(int ordinal, std::size_t bytes);
void release(physical_memory memory);
void map(void* p, std::size_t bytes, physical_memory memory);
// Read and write access for device `ordinal`.
void set_access(int ordinal, void* p, std::size_t bytes);
void unmap(void* p, std::size_t bytes);

}  // namespace strata::gpu::cuda

#endif
