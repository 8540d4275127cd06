// strata GPU device layer: the simulated device, on which every caching,
// pooling and stream-ordering rule is tested without a GPU. It behaves as
// CUDA's documentation says a GPU and its runtime may, never kinder: where the
// two disagree, the simulator is the bug.
//
// Streams are ordered work queues, each run by a worker thread; events
// complete when the work queued before them has run; a stream waiting on an
// event blocks its worker, never the host. As in CUDA:
// - several devices live in one simulated_system, and each host thread has a
//   current device (0 until it sets another);
// - each device has a legacy default stream (the null handle), and each host
//   thread its own per-thread default stream (stream::per_thread()); the two
//   kinds synchronise with each other implicitly, streams from create_stream
//   with neither;
// - destroying a stream returns at once (its work still runs) and its handle
//   is the next one create_stream hands out; work queued on a destroyed handle
//   is an error;
// - synchronous frees (deallocate, deallocate_pinned, deallocate_managed) do
//   not wait for queued work: the memory is poisoned and held back until every
//   stream has passed the free, and queued work that touches it is a
//   violation (see violation_policy);
// - virtual memory is reserved, made, mapped and opened (set_access) in
//   granules, and queued work that touches reserved memory where nothing
//   accessible is mapped is a violation too;
// - host functions run on one thread, in order, and may not call the device;
// - a capturing stream records its work into a graph, and calls CUDA deems
//   unsafe fail with errc::capture and invalidate the capture (global mode:
//   on any thread; this_thread: on the capturing one; relaxed: never);
// - events are created with or without timing; only timing events have an
//   elapsed time.
// Device memory is host memory (queued work may read and write it) or
// address-only: never-dereferenced addresses from a reserved, inaccessible
// range, so an 80 GB device can be rehearsed on a small machine. Copies that
// touch address-only memory are ordered but move nothing.
//
// The capacity limit covers synchronous allocations and everything the
// stream-ordered pool holds (live and cached); pinned and managed memory are
// plain host memory outside it. Managed memory keeps a residency per page:
// a touch from the other side migrates the page at a cost, prefetch migrates
// ahead on a stream at a lower one (managed_model). Device touches are the
// device's memsets and copies; the host announces its touches (host_access).
// The configured latency is spent on every synchronous allocate and
// deallocate, for each piece of physical memory made (create_physical) and
// when one goes back (the release or unmap that frees it), and whenever the
// stream-ordered pool takes memory from the device or gives it back. Like CUDA's pool, cached
// stream-ordered memory above the release threshold (default 0) goes back at each synchronisation;
// on running out, the pool gives back what it caches and retries once.
#ifndef STRATA_GPU_SIMULATED_HPP
#define STRATA_GPU_SIMULATED_HPP

#include <strata/gpu/device.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::gpu {

enum class memory_backing { host, address_only };

// The cost model of managed memory (defaults: free, so tests see only residency).
struct managed_model {
  // The unit that migrates (the driver moves 64 KiB and more at a time).
  std::size_t page_bytes = std::size_t{64} << 10;
  // Per page moved by a touch from the side it is not on (a page fault).
  std::chrono::nanoseconds fault_migration{0};
  // Per page moved by prefetch_async (a bulk copy, cheaper than a fault).
  std::chrono::nanoseconds prefetch_migration{0};
};

// Where a managed page is: nowhere yet, one side, or (read-mostly) both.
enum class residency : unsigned char { none = 0, host = 1, device = 2, both = 3 };

// What managed memory has moved, in pages, and the time the model charged.
struct managed_statistics {
  std::uint64_t faulted_to_host = 0;
  std::uint64_t faulted_to_device = 0;
  std::uint64_t prefetched_to_host = 0;
  std::uint64_t prefetched_to_device = 0;
  std::uint64_t remote_accesses = 0;  // touches served without moving the page
  std::chrono::nanoseconds charged{0};
};

// What the simulator does when queued work touches memory freed under it:
// print one line and abort (tests that do not expect it fail loudly), or
// record it for simulated_system::violations().
enum class violation_policy { abort, record };

struct simulated_config {
  std::size_t capacity = std::size_t{1} << 30;
  memory_backing backing = memory_backing::host;
  std::chrono::nanoseconds allocate_latency{0};
  std::chrono::nanoseconds free_latency{0};
  // Every device allocation is rounded up to, and aligned on, this power of two.
  std::size_t granularity = 256;
  // The unit of virtual-memory reservations, physical memory and mappings
  // (a power of two, a multiple of 4 KiB; CUDA's is 2 MiB on current GPUs).
  std::size_t vm_granularity = std::size_t{2} << 20;
  managed_model managed;
  // Fill freed host-backed memory with a poison byte and check it at release
  // (a benchmark that times frees may turn the fill off).
  bool poison_freed = true;
  violation_policy on_violation = violation_policy::abort;
};

class simulated_device;

// Several simulated GPUs in one process, and the CUDA runtime's state that
// spans them: each host thread's current device and capture mode, the
// handles, the one host-function thread, captures that restrict other threads.
class simulated_system {
 public:
  explicit simulated_system(int devices = 1, simulated_config config = {});
  ~simulated_system();
  simulated_system(const simulated_system&) = delete;
  simulated_system& operator=(const simulated_system&) = delete;

  int device_count() const noexcept;
  simulated_device& gpu(int ordinal);

  // cudaGetDevice / cudaSetDevice: the calling thread's current device.
  int current_device();
  void set_current_device(int ordinal);
  // cudaThreadExchangeStreamCaptureMode: set the calling thread's mode, return the old.
  capture_mode exchange_capture_mode(capture_mode mode);

  // What queued work did to freed memory, one line each (violation_policy::record).
  std::vector<std::string> violations();

  // Defined privately (src/simulated/system_state.hpp).
  struct state;

 private:
  friend class simulated_device;

  std::unique_ptr<state> state_;
  std::vector<std::unique_ptr<simulated_device>> devices_;
};

class simulated_device final : public device {
 public:
  // A device of its own one-device system.
  explicit simulated_device(simulated_config config = {});
  ~simulated_device() override;
  simulated_device(const simulated_device&) = delete;
  simulated_device& operator=(const simulated_device&) = delete;

  const char* backend_name() const noexcept override { return "simulated"; }
  int ordinal() const noexcept override { return ordinal_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) override;
  void* allocate_async(std::size_t bytes, stream s) override;
  void deallocate_async(void* p, stream s) override;
  void set_release_threshold(std::size_t bytes) override;
  void trim_to(std::size_t bytes) override;
  std::size_t vm_granularity() override;
  void* reserve_address(std::size_t bytes) override;
  void release_address(void* base, std::size_t bytes) override;
  physical_memory create_physical(std::size_t bytes) override;
  void release_physical(physical_memory memory) override;
  void map(void* p, std::size_t bytes, physical_memory memory) override;
  void set_access(void* p, std::size_t bytes) override;
  void unmap(void* p, std::size_t bytes) override;
  void* allocate_pinned(std::size_t bytes) override;
  void deallocate_pinned(void* p) override;
  void* allocate_managed(std::size_t bytes) override;
  void deallocate_managed(void* p) override;
  void prefetch_async(const void* p, std::size_t bytes, memory_location to, stream s) override;
  void advise(const void* p, std::size_t bytes, memory_advice advice,
              memory_location where) override;
  void host_access(const void* p, std::size_t bytes) override;
  stream create_stream() override;
  void destroy_stream(stream s) override;
  stream_id identify(stream s) override;
  void synchronize(stream s) override;
  void synchronize() override;
  using device::create_event;
  event create_event(event_timing timing) override;
  void destroy_event(event e) override;
  void record(event e, stream s) override;
  bool query(event e) override;
  void synchronize(event e) override;
  void wait(stream s, event e) override;
  std::chrono::nanoseconds elapsed(event start, event end) override;
  void begin_capture(stream s, capture_mode mode) override;
  graph end_capture(stream s) override;
  capture_status capture_state(stream s) override;
  void launch(graph g, stream s) override;
  void destroy_graph(graph g) override;
  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream s) override;
  void memset_async(void* p, int value, std::size_t bytes, stream s) override;
  void launch_host(stream s, host_work work) override;
  memory_info memory() override;

  // ---- simulator only ----------------------------------------------------------
  // A kernel's stand-in: `work` runs on the stream itself, in order, not on
  // the host-function thread, so it holds only its own stream.
  void launch_kernel(stream s, host_work work);

  // Failure injection: each device allocation call (allocate, allocate_async,
  // allocate_managed, create_physical) counts, whether or not a cache serves it. The nth such
  // call from now throws out_of_memory (0 cancels).
  void fail_nth_allocation(std::size_t n);
  // While on, every device allocation call throws out_of_memory.
  void set_out_of_memory(bool on);

  // Where the managed page holding `p` is (none for memory that is not managed).
  residency managed_residency(const void* p);
  managed_statistics managed_stats();

  // Bytes the stream-ordered pool caches (freed, not yet given back).
  std::size_t pool_cached_bytes();
  const simulated_config& config() const noexcept;
  simulated_system& system() noexcept { return *system_; }

 private:
  friend class simulated_system;
  simulated_device(simulated_system& owner, int ordinal);
  simulated_system::state& shared() const noexcept { return *system_->state_; }

  std::unique_ptr<simulated_system> owned_;  // the standalone constructor's system
  simulated_system* system_;
  int ordinal_;
};

}  // namespace strata::gpu

#endif
