// strata GPU device layer: the simulated device, on which every caching,
// pooling and stream-ordering rule is tested without a GPU.
//
// Streams are ordered work queues, each run by a worker thread; events complete
// when the work queued before them has run; a stream waiting on an event blocks
// its worker, never the host. Device memory is host memory (queued work may
// read and write it) or address-only: never-dereferenced addresses from a
// reserved, inaccessible range, so an 80 GB device can be rehearsed on a small
// machine. Copies that touch address-only memory are ordered but move nothing.
//
// The capacity limit covers synchronous allocations and everything the
// stream-ordered pool holds (live and cached); pinned and managed memory are
// plain host memory outside it. Managed memory keeps a residency per page:
// a touch from the other side migrates the page at a cost, prefetch migrates
// ahead on a stream at a lower one (managed_model). Device touches are the
// device's memsets and copies; the host announces its touches (host_access). The configured latency
// is spent on every synchronous allocate and deallocate, and whenever the stream-ordered pool takes
// memory from the device or gives it back (then under the device's lock, as a driver serialises
// it). The default stream is an ordinary stream here, without CUDA's legacy implicit
// synchronisation. Like CUDA's pool, cached stream-ordered memory above the release threshold
// (default 0) goes back at each synchronisation; on running out, the pool gives back what it caches
// and retries once.
#ifndef STRATA_GPU_SIMULATED_HPP
#define STRATA_GPU_SIMULATED_HPP

#include <strata/gpu/device.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

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

struct simulated_config {
  std::size_t capacity = std::size_t{1} << 30;
  memory_backing backing = memory_backing::host;
  std::chrono::nanoseconds allocate_latency{0};
  std::chrono::nanoseconds free_latency{0};
  // Every device allocation is rounded up to, and aligned on, this power of two.
  std::size_t granularity = 256;
  managed_model managed;
};

class simulated_device final : public device {
 public:
  explicit simulated_device(simulated_config config = {});
  ~simulated_device() override;
  simulated_device(const simulated_device&) = delete;
  simulated_device& operator=(const simulated_device&) = delete;

  const char* backend_name() const noexcept override { return "simulated"; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) override;
  void* allocate_async(std::size_t bytes, stream s) override;
  void deallocate_async(void* p, stream s) override;
  void set_release_threshold(std::size_t bytes) override;
  void trim_to(std::size_t bytes) override;
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
  void synchronize(stream s) override;
  void synchronize() override;
  event create_event() override;
  void destroy_event(event e) override;
  void record(event e, stream s) override;
  bool query(event e) override;
  void synchronize(event e) override;
  void wait(stream s, event e) override;
  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream s) override;
  void memset_async(void* p, int value, std::size_t bytes, stream s) override;
  void launch_host(stream s, host_work work) override;
  memory_info memory() override;

  // ---- failure injection: each device allocation call (allocate,
  // allocate_async, allocate_managed) counts, whether or not a cache serves it.
  // The nth such call from now throws out_of_memory (0 cancels).
  void fail_nth_allocation(std::size_t n);
  // While on, every device allocation call throws out_of_memory.
  void set_out_of_memory(bool on);

  // Where the managed page holding `p` is (none for memory that is not managed).
  residency managed_residency(const void* p);
  managed_statistics managed_stats();

  // Bytes the stream-ordered pool caches (freed, not yet given back).
  std::size_t pool_cached_bytes();
  const simulated_config& config() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace strata::gpu

#endif
