// The simulated system behind the emulated CUDA runtime (cuda_runtime.cpp):
// the CUDA runtime API implemented over strata's simulated devices, so the
// CUDA backend and the integration library run their tests on a machine
// without a GPU, against the same strict rules as the simulated backend.
// Test binaries link it in place of libcudart; nothing shipped does.
#ifndef STRATA_GPU_EMULATED_RUNTIME_HPP
#define STRATA_GPU_EMULATED_RUNTIME_HPP

#include <strata/gpu/simulated.hpp>

namespace strata::gpu::emulated {

// How many GPUs the emulated runtime reports.
inline constexpr int device_count = 2;

// The system every emulated CUDA call acts on: two host-backed devices of
// 256 MiB, violations recorded. Made on first use and never destroyed, as a
// CUDA runtime outlives the program's static objects.
simulated_system& system();

}  // namespace strata::gpu::emulated

#endif
