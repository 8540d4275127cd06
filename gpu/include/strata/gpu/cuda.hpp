// strata GPU device layer: the CUDA runtime backend (target strata_gpu_cuda,
// built whenever CMake finds the CUDA toolkit; STRATA_GPU_HAS_CUDA is then 1).
//
// allocate is cudaMalloc, allocate_async cudaMallocFromPoolAsync from a
// memory pool of strata's own, made on first use (the device's default pool is
// PyTorch's and CuPy's too; strata never changes its release threshold), pinned
// memory cudaMallocHost, managed memory cudaMallocManaged, host work
// cudaLaunchHostFunc, identify cudaStreamGetId, capture cudaStreamBeginCapture
// and cudaStreamEndCapture with cudaGraphInstantiate. Every call binds the
// device and restores the calling thread's current device. The null stream is
// CUDA's legacy default stream. Needs CUDA 12.0 or later; builds with 12.x and 13.x.
#ifndef STRATA_GPU_CUDA_HPP
#define STRATA_GPU_CUDA_HPP

#include <strata/gpu/device.hpp>

#include <memory>

namespace strata::gpu {

// How many CUDA devices the runtime sees: 0 without a driver or a GPU.
int cuda_device_count() noexcept;

// Open CUDA device `ordinal`; throws device_error(no_device) when it is absent.
std::unique_ptr<device> make_cuda_device(int ordinal = 0);

}  // namespace strata::gpu

#endif
