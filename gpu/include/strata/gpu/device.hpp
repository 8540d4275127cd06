// strata GPU device layer: the small device API every GPU resource is written
// against, so the same caching allocator, pools and tests run on the CUDA
// runtime or on the simulated device.
//
// Model (CUDA's, as its documentation states it, never kinder): a device
// object stands for one GPU (its ordinal) and binds that GPU around each call,
// leaving the calling thread's current device as it found it. It hands out
// memory synchronously (allocate) or in stream order (allocate_async, from a
// pool of its own with a release threshold). Work, copies and event records
// are queued on streams and run in order per stream; a stream waits on an
// event without blocking the host. Synchronous frees do not wait for queued
// work: the caller makes sure none still uses the memory. While a stream is
// capturing a graph, its work is recorded rather than run, and calls CUDA
// deems unsafe (allocate, deallocate, event queries, synchronisation) fail
// with errc::capture. Every call is thread-safe. Failures throw device_error
// (see error.hpp).
#ifndef STRATA_GPU_DEVICE_HPP
#define STRATA_GPU_DEVICE_HPP

#include <strata/gpu/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace strata::gpu {

// An ordered queue of device work, named by its handle. Besides the handles
// create_stream returns, CUDA's special ones: the null handle and legacy() name
// the device's legacy default stream, per_thread() the calling thread's own
// default stream on the device (one per host thread). A handle is only a name:
// CUDA hands a destroyed stream's handle to the next stream it creates, so
// the same handle may name another stream later (see device::identify).
struct stream {
  void* handle = nullptr;

  // cudaStreamLegacy: the same stream as the null handle.
  static stream legacy() noexcept { return stream{reinterpret_cast<void*>(std::uintptr_t{1})}; }
  // cudaStreamPerThread: a different stream on every host thread.
  static stream per_thread() noexcept { return stream{reinterpret_cast<void*>(std::uintptr_t{2})}; }
  bool is_per_thread() const noexcept { return *this == per_thread(); }
  bool is_legacy() const noexcept { return handle == nullptr || *this == legacy(); }

  friend bool operator==(stream, stream) = default;
};

// What a stream is, rather than what names it: unique for the life of the
// process (cudaStreamGetId), so a recycled handle gets a new id, and the
// per-thread handle a different id on every thread.
using stream_id = std::uint64_t;

// A marker recorded on a stream: it completes when everything queued on that
// stream before it has run. An event never recorded counts as complete.
struct event {
  void* handle = nullptr;
  friend bool operator==(event, event) = default;
};

// Whether an event can measure time (cudaEventDisableTiming is the default
// here: such events are cheaper to record and to wait on).
enum class event_timing { disabled, enabled };

// A captured sequence of stream work, instantiated and ready to launch.
struct graph {
  void* handle = nullptr;
  friend bool operator==(graph, graph) = default;
};

// How a capture restricts unsafe calls (cudaStreamCaptureMode): global forbids
// them on every thread while it lasts, this_thread only on the capturing
// thread, relaxed nowhere.
enum class capture_mode { global, this_thread, relaxed };

// Where a stream stands (cudaStreamIsCapturing): not capturing, capturing, or
// capturing a sequence an illegal call has invalidated.
enum class capture_status { none, active, invalidated };

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

// Physical device memory made for mapping into a reserved address range
// (cuMemCreate's handle): it holds memory until released and unmapped.
struct physical_memory {
  std::uint64_t handle = 0;
  friend bool operator==(physical_memory, physical_memory) = default;
};

// Host work run in stream order (cudaLaunchHostFunc). CUDA runs host
// functions on one internal thread, one after another, so a host function that
// blocks holds every stream's host functions. It must not call the device
// (CUDA forbids it) and must not throw: an exception it lets out is kept, and
// the next synchronize (device, stream or event) throws it as device_error.
using host_work = std::function<void()>;

class device {
 public:
  virtual ~device() = default;

  // "simulated" or "cuda", for reports.
  virtual const char* backend_name() const noexcept = 0;
  // Which GPU this is (the CUDA device ordinal).
  virtual int ordinal() const noexcept = 0;

  // ---- synchronous device memory (cudaMalloc / cudaFree) -------------------
  // Memory for any stream. Freeing does not wait for queued work that may
  // still use the block (CUDA only says it may): wait for it first.
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

  // ---- virtual memory (cuMemAddressReserve, cuMemCreate, cuMemMap) -----------
  // Address ranges reserved apart from physical memory, which is made in
  // pieces and mapped into them, so one range can grow and shrink in place.
  // Sizes and addresses are multiples of vm_granularity(); memory is touchable
  // only once mapped and made accessible (set_access), and touching anything
  // else is an error. None of these waits for queued work (the caller makes
  // sure none still uses what it unmaps) or may run during a capture.
  // The unit of reservation, physical memory and mapping
  // (cuMemGetAllocationGranularity, minimum).
  virtual std::size_t vm_granularity() = 0;
  // Reserve `bytes` of address space; no memory is behind it yet.
  virtual void* reserve_address(std::size_t bytes) = 0;
  // Give back a whole reservation, once nothing in it is mapped.
  virtual void release_address(void* base, std::size_t bytes) = 0;
  // Physical memory of `bytes`, taken from the device's memory
  // (out_of_memory when it does not fit).
  virtual physical_memory create_physical(std::size_t bytes) = 0;
  // Release the handle; the memory goes back once no mapping uses it either.
  virtual void release_physical(physical_memory memory) = 0;
  // Map all of `memory` (its size is `bytes`) at `p` inside a reservation,
  // where nothing is mapped; it stays inaccessible until set_access.
  virtual void map(void* p, std::size_t bytes, physical_memory memory) = 0;
  // Let this device read and write the mapped range [p, p + bytes).
  virtual void set_access(void* p, std::size_t bytes) = 0;
  // Unmap [p, p + bytes), whole mappings only.
  virtual void unmap(void* p, std::size_t bytes) = 0;

  // ---- host memory -----------------------------------------------------------
  // Page-locked host memory for fast, asynchronous transfers. Freeing does
  // not wait for queued copies that use it either.
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void deallocate_pinned(void* p) = 0;
  // Memory both the host and the device may touch (unified memory); freeing
  // does not wait for queued work.
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
  // A new stream that does not synchronise with the legacy default stream
  // (cudaStreamNonBlocking).
  virtual stream create_stream() = 0;
  // Returns at once: work already queued still runs. The handle may name a
  // new stream from the next create_stream on; using it before is an error.
  virtual void destroy_stream(stream s) = 0;
  // The stream `s` names now, for the calling thread (an unknown or destroyed
  // handle is invalid_argument).
  virtual stream_id identify(stream s) = 0;
  // Block the host until everything queued on `s` has run.
  virtual void synchronize(stream s) = 0;
  // Block the host until everything queued on every stream has run.
  virtual void synchronize() = 0;

  // ---- events ----------------------------------------------------------------
  virtual event create_event(event_timing timing) = 0;
  event create_event() { return create_event(event_timing::disabled); }
  virtual void destroy_event(event e) = 0;
  virtual void record(event e, stream s) = 0;
  // True once the work before the event's latest record has run.
  virtual bool query(event e) = 0;
  virtual void synchronize(event e) = 0;
  // Make later work on `s` wait for `e` (its latest record); the host goes on.
  virtual void wait(stream s, event e) = 0;
  // The time between two completed records of timing events (cudaEventElapsedTime).
  virtual std::chrono::nanoseconds elapsed(event start, event end) = 0;

  // ---- graph capture -----------------------------------------------------------
  // From now on work queued on `s` is recorded, not run, until end_capture
  // (cudaStreamBeginCapture; not on the legacy stream).
  virtual void begin_capture(stream s, capture_mode mode) = 0;
  // The recorded work as a graph to launch (throws errc::capture when an
  // illegal call invalidated the capture; the stream stops capturing either way).
  virtual graph end_capture(stream s) = 0;
  virtual capture_status capture_state(stream s) = 0;
  // Queue the graph's work on `s`.
  virtual void launch(graph g, stream s) = 0;
  virtual void destroy_graph(graph g) = 0;

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
