// strata GPU caching allocator: PyTorch's kind, over the device API, so it
// runs on the CUDA runtime and on the simulated device alike.
//
// Segments come from the device's synchronous allocate and are cut into
// blocks. Requests round to 512 bytes (optionally to power-of-two divisions,
// see caching_config); those up to 1 MiB come from a small pool of 2 MiB
// segments, larger ones from a large pool. A free block is cached with the
// stream it was freed on: work on that stream may reuse it at once (stream
// order protects it); another stream reuses it only after the allocator has
// made that stream wait on an event recorded on the first (the host never
// blocks). record_stream marks a block as used on another stream too: when it
// is freed, events are recorded on those streams and the block is not reused
// until they complete. When the device runs out, the allocator gives back its
// fully free segments and tries once more, then throws out_of_memory_error.
//
// It is a strata device resource (stream_ordered_resource.hpp): every CCCL
// cuda::mr spelling, alignments up to device_alignment (256 bytes).
//
// Thread safety: every call takes one mutex around the allocator's state (the
// device's own calls, including its latency, then run under it too). Streams
// must outlive the blocks cached with them; empty_cache or destroying the
// allocator lets go of them.
#ifndef STRATA_GPU_CACHING_ALLOCATOR_HPP
#define STRATA_GPU_CACHING_ALLOCATOR_HPP

#include <strata/gpu/caching/config.hpp>
#include <strata/gpu/caching/out_of_memory.hpp>
#include <strata/gpu/caching/snapshot.hpp>
#include <strata/gpu/caching/statistics.hpp>
#include <strata/gpu/device.hpp>
#include <strata/gpu/memory_access.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace strata::gpu {

class caching_allocator : public stream_ordered_resource<caching_allocator> {
 public:
  static constexpr memory_access access = memory_access::device;

  explicit caching_allocator(device& dev, caching_config config = {});
  // Waits for the device, then gives every segment back, blocks still handed out included.
  ~caching_allocator();
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;

  using stream_ordered_resource::allocate;
  using stream_ordered_resource::deallocate;

  // Memory for work on `s`, usable by it at once. Null for 0 bytes.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream s);
  // Free `p` in the order of `s`: later work on `s` may reuse it at once. The
  // block is cached with `s` from now on; when `s` is not the stream it was
  // allocated on, that stream counts as recorded with record_stream, so the
  // block waits for the work queued there too.
  void deallocate_on(void* p, std::size_t bytes, std::size_t alignment, stream s);
  // Memory any stream may use once this returns (from the default stream's
  // cache, after the work queued there).
  void* allocate_now(std::size_t bytes, std::size_t alignment);
  // Waits for the device, so the block may be reused on any stream at once.
  void deallocate_now(void* p, std::size_t bytes, std::size_t alignment);
  // Free `p` in the order of the stream it was allocated on.
  void deallocate(void* p);

  // `p` is also used by work on `s`: when it is freed, it waits for the work
  // queued on `s` until then before any reuse.
  void record_stream(void* p, stream s);

  // Give every fully free segment back to the device, after waiting for the
  // events of blocks freed under record_stream.
  void empty_cache();

  caching_stats stats() const;
  // Peaks start again from the current values.
  void reset_peak_stats();
  // The totals added and taken, the hit, retry and OOM counts start again from 0.
  void reset_accumulated_stats();

  std::vector<trace_entry> trace() const;
  memory_snapshot snapshot() const;

  const caching_config& config() const noexcept;
  device& upstream() const noexcept;

  friend bool operator==(const caching_allocator& a, const caching_allocator& b) noexcept {
    return &a == &b;
  }

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace strata::gpu

#endif
