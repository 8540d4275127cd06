// strata GPU resources: the stream-ordered device resource, cudaMallocAsync
// and cudaFreeAsync from the device's stream-ordered pool.
//
//   strata::gpu::async_resource pooled(dev, 64 << 20);  // keep 64 MiB cached
//   void* p = pooled.allocate(bytes, stream);           // device::allocate_async
//   pooled.deallocate(p, bytes, stream);                // device::deallocate_async
//
// Reuse follows the device's pool: a block freed on a stream is reused at once
// by later work on that stream, and by another stream once it has waited on an
// event recorded on the first. The synchronous forms work on the default
// stream and synchronise it, so the memory is usable everywhere at once (and a
// freed block is gone before deallocate returns). The release threshold says
// how much freed memory the pool keeps across synchronisations; trim gives it
// back. Two resources are equal when they name one device (one pool).
#ifndef STRATA_GPU_ASYNC_RESOURCE_HPP
#define STRATA_GPU_ASYNC_RESOURCE_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <cstddef>

namespace strata::gpu {

class async_resource : public stream_ordered_resource<async_resource> {
 public:
  static constexpr memory_access access = memory_access::device;

  // Sets the device pool's release threshold: the bytes it keeps cached.
  explicit async_resource(device& dev, std::size_t release_threshold = 0) : device_(&dev) {
    device_->set_release_threshold(release_threshold);
  }

  // Give cached memory back to the device until at most keep_bytes stay cached.
  void trim(std::size_t keep_bytes = 0) { device_->trim_to(keep_bytes); }

  device& owner() const noexcept { return *device_; }
  friend bool operator==(const async_resource& a, const async_resource& b) noexcept {
    return a.device_ == b.device_;
  }

 private:
  friend class stream_ordered_resource<async_resource>;

  // In stream order, from the device's pool.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream s) {
    check_device_alignment(alignment, "async_resource::allocate");
    return device_->allocate_async(bytes, s);
  }
  // In stream order: the block is free once work queued before it has run.
  void deallocate_on(void* p, std::size_t, std::size_t, stream s) {
    device_->deallocate_async(p, s);
  }
  // On the default stream, synchronised so any stream may use the block at once.
  void* allocate_now(std::size_t bytes, std::size_t alignment) {
    void* p = allocate_on(bytes, alignment, stream{});
    device_->synchronize(stream{});
    return p;
  }
  // On the default stream, synchronised so the block is gone on return.
  void deallocate_now(void* p, std::size_t bytes, std::size_t alignment) {
    deallocate_on(p, bytes, alignment, stream{});
    device_->synchronize(stream{});
  }

  device* device_;
};

}  // namespace strata::gpu

#endif
