// strata GPU device layer: the small device API every GPU resource is written
// against, so the same caching allocator, pools and tests run on the CUDA
// runtime or on the simulated device.
//
// Model (CUDA's): a device hands out memory synchronously (allocate) or in
// stream order (allocate_async, from a pool with a release threshold); work,
// copies and event records are queued on streams and run in order per stream;
// a stream waits on an event without blocking the host. Every call is
// thread-safe. Failures throw device_error (see error.hpp).
#ifndef STRATA_GPU_DEVICE_HPP
#define STRATA_GPU_DEVICE_HPP

#include <strata/gpu/error.hpp>

#include <cstddef>
#include <functional>

namespace strata::gpu {

// An ordered queue of device work. The null stream is the device's default stream.
struct stream {
  void* handle = nullptr;
  friend bool operator==(stream, stream) = default;
};

// A marker recorded on a stream: it completes when everything queued on that
// stream before it has run. An event never recorded counts as complete.
struct event {
  void* handle = nullptr;
  friend bool operator==(event, event) = default;
};

// Device memory as cudaMemGetInfo reports it.
struct memory_info {
  std::size_t free = 0;
  std::size_t total = 0;
};

enum class copy_kind { host_to_device, device_to_host, device_to_device };

// Which side of the machine managed memory lives on or is meant for.
enum class memory_location { host, device };

// cudaMemAdvise's hints for managed memory. Read-mostly lets both sides keep a
// copy of a page (a write drops the other side's copy); a preferred location
// keeps pages there, and the other side then reaches them remotely once it is
// declared with accessed_by; accessed_by maps the pages for that side so its
// touches are remote accesses rather than faults.
enum class memory_advice {
  set_read_mostly,
  unset_read_mostly,
  set_preferred_location,
  unset_preferred_location,
  set_accessed_by,
  unset_accessed_by,
};

// Host work run in stream order: the simulated backend's stand-in for a kernel.
// It must not call back into the device (CUDA forbids it in host functions).
using host_work = std::function<void()>;

class device {
 public:
  virtual ~device() = default;

  // "simulated" or "cuda", for reports.
  virtual const char* backend_name() const noexcept = 0;

  // ---- synchronous device memory (cudaMalloc / cudaFree) -------------------
  // Memory for any stream; freeing it waits for the whole device first.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) = 0;

  // ---- stream-ordered device memory (cudaMallocAsync / cudaFreeAsync) -----
  // Memory freed on a stream may be reused at once by later work on that
  // stream, and by another stream once it has waited on an event recorded on
  // the first after the free.
  virtual void* allocate_async(std::size_t bytes, stream s) = 0;
  virtual void deallocate_async(void* p, stream s) = 0;
  // Bytes the stream-ordered pool keeps cached across synchronisations.
  virtual void set_release_threshold(std::size_t bytes) = 0;
  // Give cached stream-ordered memory back until at most `bytes` stay cached.
  virtual void trim_to(std::size_t bytes) = 0;

  // ---- host memory -----------------------------------------------------------
  // Page-locked host memory for fast, asynchronous transfers.
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void deallocate_pinned(void* p) = 0;
  // Memory both the host and the device may touch (unified memory).
  virtual void* allocate_managed(std::size_t bytes) = 0;
  virtual void deallocate_managed(void* p) = 0;
  // cudaMemPrefetchAsync: migrate managed pages to `to` in the order of `s`.
  virtual void prefetch_async(const void* p, std::size_t bytes, memory_location to, stream s) = 0;
  // cudaMemAdvise: a hint about how managed pages will be used.
  virtual void advise(const void* p, std::size_t bytes, memory_advice advice,
                      memory_location where) = 0;
  // The host is about to touch managed memory. On a GPU the hardware faults
  // move the pages and this does nothing; the simulated device cannot see
  // loads and stores, so this is where it migrates pages and charges faults.
  virtual void host_access(const void* p, std::size_t bytes) = 0;

  // ---- streams ---------------------------------------------------------------
  virtual stream create_stream() = 0;
  // Destroying a stream lets its queued work finish.
  virtual void destroy_stream(stream s) = 0;
  // Block the host until everything queued on `s` has run.
  virtual void synchronize(stream s) = 0;
  // Block the host until everything queued on every stream has run.
  virtual void synchronize() = 0;

  // ---- events ----------------------------------------------------------------
  virtual event create_event() = 0;
  virtual void destroy_event(event e) = 0;
  virtual void record(event e, stream s) = 0;
  // True once the work before the event's latest record has run.
  virtual bool query(event e) = 0;
  virtual void synchronize(event e) = 0;
  // Make later work on `s` wait for `e` (its latest record); the host goes on.
  virtual void wait(stream s, event e) = 0;

  // ---- work and copies ---------------------------------------------------------
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind,
                          stream s) = 0;
  // cudaMemsetAsync: the device writes `value` into every byte, in stream order.
  virtual void memset_async(void* p, int value, std::size_t bytes, stream s) = 0;
  virtual void launch_host(stream s, host_work work) = 0;

  virtual memory_info memory() = 0;
};

}  // namespace strata::gpu

#endif
