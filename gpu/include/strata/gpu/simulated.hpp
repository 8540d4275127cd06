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
// plain host memory outside it. The configured latency is spent on every
// synchronous allocate and deallocate, and whenever the stream-ordered pool
// takes memory from the device or gives it back (then under the device's lock,
// as a driver serialises it). The default stream is an ordinary stream here,
// without CUDA's legacy implicit synchronisation. Like CUDA's pool, cached
// stream-ordered memory above the release threshold (default 0) goes back at
// each synchronisation; on running out, the pool gives back what it caches and
// retries once.
#ifndef STRATA_GPU_SIMULATED_HPP
#define STRATA_GPU_SIMULATED_HPP

#include <strata/gpu/device.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace strata::gpu {

enum class memory_backing { host, address_only };

struct simulated_config {
  std::size_t capacity = std::size_t{1} << 30;
  memory_backing backing = memory_backing::host;
  std::chrono::nanoseconds allocate_latency{0};
  std::chrono::nanoseconds free_latency{0};
  // Every device allocation is rounded up to, and aligned on, this power of two.
  std::size_t granularity = 256;
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
  void launch_host(stream s, host_work work) override;
  memory_info memory() override;

  // ---- failure injection: each device allocation call (allocate,
  // allocate_async, allocate_managed) counts, whether or not a cache serves it.
  // The nth such call from now throws out_of_memory (0 cancels).
  void fail_nth_allocation(std::size_t n);
  // While on, every device allocation call throws out_of_memory.
  void set_out_of_memory(bool on);

  // Bytes the stream-ordered pool caches (freed, not yet given back).
  std::size_t pool_cached_bytes();
  const simulated_config& config() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace strata::gpu

#endif
