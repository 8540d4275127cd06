// The device the GPU scenarios run on: CUDA device 0 where strata-bench was built
// with the CUDA backend and the runtime sees a GPU, else the simulated device set up
// to stand in for one. Every GPU scenario names the backend in its strategy columns
// and in a fact, so simulated figures are never read as a GPU's.
#pragma once

#include <strata/gpu/device.hpp>
#include <strata/gpu/simulated.hpp>

#include <memory>
#include <string>

namespace strata_bench {

struct gpu_backend {
  std::unique_ptr<strata::gpu::device> device;
  bool simulated = false;
  std::string tag;          // "cuda" or "simulated": the suffix of each strategy column
  std::string description;  // the report's "backend" fact: which device, and how simulated
};

// CUDA device 0 when there is one, else a simulated device with the `stand_in` settings.
gpu_backend open_gpu_backend(const strata::gpu::simulated_config& stand_in);

// `name` with the backend's tag: "strata caching_allocator (simulated)".
inline std::string on_backend(const gpu_backend& backend, const std::string& name) {
  return name + " (" + backend.tag + ")";
}

}  // namespace strata_bench
