// strata GPU resources: the direct device resource, cudaMalloc and cudaFree.
//
//   strata::gpu::device_resource direct(dev);
//   void* p = direct.allocate(bytes, stream);   // device::allocate
//   direct.deallocate(p, bytes, stream);        // device::deallocate
//
// Allocation is synchronous (cudaMalloc), so the memory is usable on every
// stream at once. cudaFree does not promise to wait for queued work, so the
// stream form of deallocate first waits for the work queued on `stream` (the
// host blocks); the synchronous form frees at once, for memory no queued work
// uses any more. Every call costs the device's allocation latency; the pools
// exist to avoid it. A reference to a device: copies share it, and two
// resources are equal when they name one device.
#ifndef STRATA_GPU_DEVICE_RESOURCE_HPP
#define STRATA_GPU_DEVICE_RESOURCE_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <cstddef>
#include <string>

namespace strata::gpu {

// Throw invalid_argument for an alignment the device's own allocations cannot
// promise (a power of two up to device_alignment is what cudaMalloc gives).
inline void check_device_alignment(std::size_t alignment, const char* who) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > device_alignment)
    throw device_error(errc::invalid_argument, std::string(who) + ": alignment " +
                                                   std::to_string(alignment) +
                                                   " is not a power of two up to 256");
}

class device_resource : public stream_ordered_resource<device_resource> {
 public:
  static constexpr memory_access access = memory_access::device;

  explicit device_resource(device& dev) noexcept : device_(&dev) {}

  device& owner() const noexcept { return *device_; }
  friend bool operator==(const device_resource& a, const device_resource& b) noexcept {
    return a.device_ == b.device_;
  }

 private:
  friend class stream_ordered_resource<device_resource>;

  // cudaMalloc is synchronous: the stream only documents where the block is used.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream) {
    return allocate_now(bytes, alignment);
  }
  // The work queued on the stream may still use the block: it runs first.
  void deallocate_on(void* p, std::size_t bytes, std::size_t alignment, stream s) {
    device_->synchronize(s);
    deallocate_now(p, bytes, alignment);
  }
  void* allocate_now(std::size_t bytes, std::size_t alignment) {
    check_device_alignment(alignment, "device_resource::allocate");
    return device_->allocate(bytes);
  }
  void deallocate_now(void* p, std::size_t, std::size_t) { device_->deallocate(p); }

  device* device_;
};

}  // namespace strata::gpu

#endif
