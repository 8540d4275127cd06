// strata GPU integration: the per-device allocators, made lazily under a lock
// and then read without one.
#include "device_allocators.hpp"

#include <strata/gpu/caching/config.hpp>
#include <strata/gpu/cuda.hpp>
#include <strata/gpu/error.hpp>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace strata::gpu::integration {
namespace {

// A CUDA device and the caching allocator over it.
struct device_allocator {
  std::unique_ptr<device> dev;
  caching_allocator cache;

  device_allocator(int ordinal, const caching_config& config)
      : dev(make_cuda_device(ordinal)), cache(*dev, config) {}
};

// Published once made, so the hot path is one acquire load.
std::array<std::atomic<device_allocator*>, max_devices> made{};
std::mutex making;

// The configuration, read when a device's allocator is made; this library is
// the caching allocator, so the other backend is refused rather than ignored.
caching_config configuration() {
  caching_config config = caching_config_from_environment();
  if (config.backend != allocator_backend::native)
    throw std::invalid_argument(
        "STRATA_GPU_ALLOC_CONF: backend:cudaMallocAsync is not served by libstrata-gpu-alloc "
        "(the caching allocator); use PyTorch's or CuPy's own cudaMallocAsync pool instead");
  return config;
}

// Slow path: make the allocator under the lock, unless another thread just did.
[[gnu::cold, gnu::noinline]] caching_allocator& make_allocator(int ordinal) {
  std::lock_guard lock(making);
  if (device_allocator* a = made[ordinal].load(std::memory_order_relaxed)) return a->cache;
  // Never deleted: blocks may be freed from other libraries' destructors at
  // exit, after this library's own static objects are gone.
  auto* a = new device_allocator(ordinal, configuration());
  made[ordinal].store(a, std::memory_order_release);
  return a->cache;
}

}  // namespace

// Fast path: the published allocator, else make it.
caching_allocator& allocator_for(int ordinal) {
  if (ordinal < 0 || ordinal >= max_devices)
    throw device_error(errc::no_device, "no CUDA device " + std::to_string(ordinal));
  if (device_allocator* a = made[ordinal].load(std::memory_order_acquire)) return a->cache;
  return make_allocator(ordinal);
}

// A read of the published pointer alone.
caching_allocator* allocator_if_made(int ordinal) noexcept {
  if (ordinal < 0 || ordinal >= max_devices) return nullptr;
  device_allocator* a = made[ordinal].load(std::memory_order_acquire);
  return a != nullptr ? &a->cache : nullptr;
}

}  // namespace strata::gpu::integration
