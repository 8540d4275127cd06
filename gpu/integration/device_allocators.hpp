// strata GPU integration: one caching allocator per CUDA device, made on its
// first allocation and kept for the life of the process.
#ifndef STRATA_GPU_INTEGRATION_DEVICE_ALLOCATORS_HPP
#define STRATA_GPU_INTEGRATION_DEVICE_ALLOCATORS_HPP

#include <strata/gpu/caching_allocator.hpp>

namespace strata::gpu::integration {

// Device ordinals the library serves: 0 up to this, PyTorch's own limit.
inline constexpr int max_devices = 64;

// The allocator of CUDA device `ordinal`, made on first use over the CUDA
// backend with STRATA_GPU_ALLOC_CONF's configuration. Thread-safe. Throws
// device_error (no_device where the device does not exist) or
// std::invalid_argument for a configuration it cannot serve.
caching_allocator& allocator_for(int ordinal);

// Throws device_error(no_device) unless CUDA device `ordinal` exists.
void check_device(int ordinal);

// The allocator of `ordinal` if one has been made, else null; never makes one.
caching_allocator* allocator_if_made(int ordinal) noexcept;

}  // namespace strata::gpu::integration

#endif
