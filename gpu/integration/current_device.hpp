// strata GPU integration: the calling thread's current CUDA device, set for
// one call into the library and put back after it.
#ifndef STRATA_GPU_INTEGRATION_CURRENT_DEVICE_HPP
#define STRATA_GPU_INTEGRATION_CURRENT_DEVICE_HPP

#include <cuda_runtime_api.h>

namespace strata::gpu::integration {

// The host program (PyTorch, CuPy) keeps its own notion of the current device:
// each call runs on the device it names and leaves the caller's as it was.
// A CUDA error here is cleared at once so it never surfaces in the caller's
// next cudaGetLastError; opening the device then reports the failure.
class current_device_scope {
 public:
  // Make `ordinal` current unless it already is.
  explicit current_device_scope(int ordinal) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return;
    }
    if (previous_ == ordinal) return;
    if (cudaSetDevice(ordinal) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return;
    }
    restore_ = true;
  }
  current_device_scope(const current_device_scope&) = delete;
  current_device_scope& operator=(const current_device_scope&) = delete;

  // Put the caller's device back.
  ~current_device_scope() {
    if (restore_ && cudaSetDevice(previous_) != cudaSuccess) static_cast<void>(cudaGetLastError());
  }

 private:
  int previous_ = -1;
  bool restore_ = false;
};

}  // namespace strata::gpu::integration

#endif
