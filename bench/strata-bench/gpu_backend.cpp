// The choice between the CUDA backend and the simulated device, made once per worker.
#include "gpu_backend.hpp"

#include <chrono>

#if STRATA_GPU_HAS_CUDA
#include <cuda_runtime_api.h>
#include <strata/gpu/cuda.hpp>
#endif

namespace strata_bench {

namespace {

// The simulated settings in the report's words: latencies, and what the memory is.
std::string describe(const strata::gpu::simulated_config& config) {
  using std::chrono::microseconds;
  const auto us = [](std::chrono::nanoseconds t) {
    return std::to_string(std::chrono::duration_cast<microseconds>(t).count()) + " µs";
  };
  return "simulated device (no GPU, or no CUDA backend in this build): allocate latency " +
         us(config.allocate_latency) + ", free latency " + us(config.free_latency) + ", " +
         std::to_string(config.capacity >> 20) + " MB capacity, " +
         (config.backing == strata::gpu::memory_backing::host ? "host-backed memory"
                                                              : "address-only memory");
}

#if STRATA_GPU_HAS_CUDA
// The GPU's name as the runtime reports it, for the report.
std::string cuda_device_name(int ordinal) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess) return "CUDA device";
  return properties.name;
}
#endif

}  // namespace

// A GPU when the build and the machine both have one; the stand-in otherwise.
gpu_backend open_gpu_backend(const strata::gpu::simulated_config& stand_in) {
  gpu_backend backend;
#if STRATA_GPU_HAS_CUDA
  if (strata::gpu::cuda_device_count() > 0) {
    backend.device = strata::gpu::make_cuda_device(0);
    backend.tag = "cuda";
    backend.description = "CUDA runtime on device 0: " + cuda_device_name(0);
    return backend;
  }
#endif
  // The scenarios time frees: the simulator's poison fill of freed memory
  // (a test aid) would be charged to them.
  strata::gpu::simulated_config timed = stand_in;
  timed.poison_freed = false;
  backend.device = std::make_unique<strata::gpu::simulated_device>(timed);
  backend.simulated = true;
  backend.tag = "simulated";
  backend.description = describe(stand_in);
  return backend;
}

}  // namespace strata_bench
