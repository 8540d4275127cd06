// strata GPU resources: device memory as a host_resource-shaped upstream, so
// host-side algorithms that never touch the memory they manage (bfc, buddy)
// carve device memory unchanged. Synchronous: each region is a cudaMalloc.
#ifndef STRATA_GPU_DEVICE_UPSTREAM_HPP
#define STRATA_GPU_DEVICE_UPSTREAM_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/ledger_source.hpp>
#include <strata/gpu/memory_access.hpp>

#include <cstddef>
#include <new>

namespace strata::gpu {

class device_upstream {
 public:
  static constexpr memory_access access = memory_access::device;
  static constexpr const char* pool_name = "device_pool";
  static constexpr ledger_domain ledger_memory = ledger_domain::device;

  explicit device_upstream(device& dev) noexcept : device_(&dev) {}

  // A region from the device; the device running out becomes std::bad_alloc,
  // the failure host algorithms back off from (bfc tries a smaller region).
  void* allocate(std::size_t bytes, std::size_t alignment) {
    check_device_alignment(alignment, "device_upstream::allocate");
    try {
      return device_->allocate(bytes);
    } catch (const device_error& e) {
      if (e.is_out_of_memory()) throw std::bad_alloc();
      throw;
    }
  }

  // The region goes back to the device at once: the pool gives back only
  // regions whose blocks no queued work uses (their frees' events completed).
  // Host algorithms give regions back from noexcept paths: a device that
  // refuses its own region terminates.
  void deallocate(void* p, std::size_t, std::size_t) noexcept { device_->deallocate(p); }

  bool is_equal(const device_upstream& other) const noexcept { return device_ == other.device_; }

  device& owner() const noexcept { return *device_; }
  // The device a resource over this upstream holds memory on, for the memory ledger.
  ledger_device_source ledger_device() const noexcept { return ledger_source_of(*device_); }

 private:
  device* device_;
};

}  // namespace strata::gpu

#endif
