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

// Slow path: make the allocator under the lock, unless another thread just did.
[[gnu::cold, gnu::noinline]] caching_allocator& make_allocator(int ordinal) {
  std::lock_guard lock(making);
  if (device_allocator* a = made[ordinal].load(std::memory_order_relaxed)) return a->cache;
  // Never deleted: blocks may be freed from other libraries' destructors at
  // exit, after this library's own static objects are gone.
  auto* a = new device_allocator(ordinal, caching_config_from_environment());
  made[ordinal].store(a, std::memory_order_release);
  return a->cache;
}

}  // namespace

// Fast path: the published allocator, else make it.
caching_allocator& allocator_for(int ordinal) {
  check_device(ordinal);
  if (device_allocator* a = made[ordinal].load(std::memory_order_acquire)) return a->cache;
  return make_allocator(ordinal);
}

// The runtime's count is read once: devices do not come and go in a process.
void check_device(int ordinal) {
  static const int count = cuda_device_count();
  if (ordinal < 0 || ordinal >= max_devices || ordinal >= count)
    throw device_error(errc::no_device, "no CUDA device " + std::to_string(ordinal) + " (" +
                                            std::to_string(count) + " found)");
}

// A read of the published pointer alone.
caching_allocator* allocator_if_made(int ordinal) noexcept {
  if (ordinal < 0 || ordinal >= max_devices) return nullptr;
  device_allocator* a = made[ordinal].load(std::memory_order_acquire);
  return a != nullptr ? &a->cache : nullptr;
}

}  // namespace strata::gpu::integration
