// strata GPU resources: managed (unified) memory as a host_resource-shaped
// upstream, so bfc carves it as it carves device memory. Each region is one
// cudaMallocManaged; the advice hints given here are applied to every region
// as it is taken, so every block carved from it inherits them.
#ifndef STRATA_GPU_MANAGED_UPSTREAM_HPP
#define STRATA_GPU_MANAGED_UPSTREAM_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/ledger_source.hpp>
#include <strata/gpu/memory_access.hpp>

#include <cstddef>
#include <new>
#include <optional>

namespace strata::gpu {

// cudaMemAdvise hints for every region of a managed pool.
struct managed_hints {
  bool read_mostly = false;
  std::optional<memory_location> preferred_location;
  bool accessed_by_device = false;
  bool accessed_by_host = false;
};

class managed_upstream {
 public:
  static constexpr memory_access access = memory_access::managed;
  static constexpr const char* pool_name = "managed_pool";
  static constexpr ledger_domain ledger_memory = ledger_domain::managed;

  explicit managed_upstream(device& dev, managed_hints hints = {}) noexcept
      : device_(&dev), hints_(hints) {}

  // A region of managed memory with the hints applied; the device running out
  // becomes std::bad_alloc, the failure bfc backs off from.
  void* allocate(std::size_t bytes, std::size_t) {
    void* p = nullptr;
    try {
      p = device_->allocate_managed(bytes);
    } catch (const device_error& e) {
      if (e.is_out_of_memory()) throw std::bad_alloc();
      throw;
    }
    try {
      advise_region(p, bytes);
    } catch (...) {
      device_->deallocate_managed(p);
      throw;
    }
    return p;
  }

  // The region goes back to the device at once: the pool gives back only
  // regions whose blocks no queued work uses.
  void deallocate(void* p, std::size_t, std::size_t) noexcept { device_->deallocate_managed(p); }

  bool is_equal(const managed_upstream& other) const noexcept { return device_ == other.device_; }

  device& owner() const noexcept { return *device_; }
  // The device a resource over this upstream holds memory on, for the memory ledger.
  ledger_device_source ledger_device() const noexcept { return ledger_source_of(*device_); }
  const managed_hints& hints() const noexcept { return hints_; }

 private:
  // Each hint that is set, over the whole region.
  void advise_region(void* p, std::size_t bytes) {
    if (hints_.read_mostly)
      device_->advise(p, bytes, memory_advice::set_read_mostly, memory_location::device);
    if (hints_.preferred_location)
      device_->advise(p, bytes, memory_advice::set_preferred_location, *hints_.preferred_location);
    if (hints_.accessed_by_device)
      device_->advise(p, bytes, memory_advice::set_accessed_by, memory_location::device);
    if (hints_.accessed_by_host)
      device_->advise(p, bytes, memory_advice::set_accessed_by, memory_location::host);
  }

  device* device_;
  managed_hints hints_;
};

}  // namespace strata::gpu

#endif
