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
// Streams are told apart by what they are, not by their handles
// (device::identify): the per-thread default stream is a different stream on
// every thread, and a handle CUDA recycles for a new stream names a new
// stream. A stream about to be destroyed should be announced
// (stream_destroyed): blocks cached with it then wait for an event recorded
// on it, and a later free of a block allocated on it uses that event. A stream
// that vanished unannounced is noticed when its handle no longer names it, and
// the allocator then waits for the whole device before reusing its blocks.
//
// The device's frees do not wait for queued work, so the allocator does:
// before a segment goes back (empty_cache, garbage collection, running out),
// it waits for an event on every stream that last used the segment's blocks.
//
// CUDA graph capture (PyTorch's graph pools): between begin_allocate_to_pool
// and end_allocate_to_pool, allocations on the streams a filter accepts come
// from a private pool, which is set aside before the capture starts. While any
// capture is under way the allocator never queries an event, never records
// one on behalf of a free (such frees wait until the capture ends), and never
// asks the device for memory for a capturing stream; allocating on a
// capturing stream outside a graph pool is refused (errc::capture).
//
// It is a strata device resource (stream_ordered_resource.hpp): every CCCL
// cuda::mr spelling, alignments up to device_alignment (256 bytes).
//
// Thread safety: every call takes one mutex around the allocator's state (the
// device's own calls, including its latency, then run under it too).
#ifndef STRATA_GPU_CACHING_ALLOCATOR_HPP
#define STRATA_GPU_CACHING_ALLOCATOR_HPP

#include <strata/gpu/caching/config.hpp>
#include <strata/gpu/caching/out_of_memory.hpp>
#include <strata/gpu/caching/snapshot.hpp>
#include <strata/gpu/caching/statistics.hpp>
#include <strata/gpu/device.hpp>
#include <strata/gpu/ledger_source.hpp>
#include <strata/gpu/liveness.hpp>
#include <strata/gpu/memory_access.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strata::gpu {

// A graph pool's name, two numbers as PyTorch's MempoolId_t.
struct graph_pool_id {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  friend bool operator==(const graph_pool_id&, const graph_pool_id&) = default;
};

class caching_allocator : public stream_ordered_resource<caching_allocator> {
 public:
  static constexpr memory_access access = memory_access::device;

  explicit caching_allocator(device& dev, caching_config config = {});
  // Waits for the device, then gives every segment back, blocks still handed out
  // included. A call on a destroyed allocator, or a second destructor call, is
  // one line and abort.
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

  // `s` is about to be destroyed (call it before destroy_stream): what is
  // cached with it waits for an event recorded on it now.
  void stream_destroyed(stream s);

  // Allocations on streams `filter` accepts come from the graph pool `id`
  // until end_allocate_to_pool. Call it before the capture begins: it waits
  // for the device and sets aside caching_config::graph_pool_reserve bytes (a
  // pool begun again keeps what it has). During the capture the pool takes
  // only that memory and segments of the cache that were idle at begin.
  void begin_allocate_to_pool(graph_pool_id id, std::function<bool(stream)> filter);
  void end_allocate_to_pool(graph_pool_id id);
  // The pool's graphs will not run again: wait for the device, and hand the
  // pool's memory back to the cache (blocks still handed out return there when freed).
  void release_pool(graph_pool_id id);

  // Give every fully free segment back to the device, after waiting for the
  // events of blocks freed under record_stream and for the streams that last
  // used them.
  void empty_cache();

  // The largest request on `s` that would succeed now, computed without
  // allocating: from the cached blocks (any stream's: another's is borrowed
  // after an event), the segments that would be split, and the device's free
  // memory plus the whole free segments a retry would give back (the device's
  // free memory is taken as one piece, which fragmentation of the device
  // itself can belie). For a stream a graph pool takes during a capture: the
  // pool's blocks and the idle segments it may adopt, never the device.
  std::size_t largest_allocatable(stream s);
  // Whether allocating `bytes` on `s` would succeed now, by the same rules.
  bool would_fit(std::size_t bytes, stream s);

  // Called with the report when an allocation runs out of memory for good,
  // on the allocating thread, after the allocator's lock is released (an
  // observer may call the allocator) and before out_of_memory_error is
  // thrown. An exception an observer throws propagates instead. Returns the
  // id remove_oom_observer takes.
  using oom_observer = std::function<void(const out_of_memory_report&)>;
  std::uint64_t add_oom_observer(oom_observer observer);
  // False when `id` names no observer. An observer already being called on
  // another thread finishes that call.
  bool remove_oom_observer(std::uint64_t id);

  caching_stats stats() const;
  // Peaks start again from the current values.
  void reset_peak_stats();
  // The totals added and taken, the hit, retry and OOM counts start again from 0.
  void reset_accumulated_stats();

  std::vector<trace_entry> trace() const;
  memory_snapshot snapshot() const;

  const caching_config& config() const noexcept;
  device& upstream() const noexcept;
  // This allocator's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }

  friend bool operator==(const caching_allocator& a, const caching_allocator& b) noexcept {
    return &a == &b;
  }

 private:
  // The ledger's figures, under the allocator's lock: segments held, blocks handed out.
  static ledger_figures ledger_figures_of(const void* allocator) {
    caching_stats s = static_cast<const caching_allocator*>(allocator)->stats();
    return {static_cast<std::size_t>(s.all.reserved_bytes.current),
            static_cast<std::size_t>(s.all.allocated_bytes.current)};
  }

  struct state;
  liveness life_{"caching_allocator"};
  std::unique_ptr<state> state_;
  // Joins once state_ exists, and leaves before it goes (members end in reverse order).
  ledger_entry ledger_ = ledger_entry("caching_allocator", ledger_domain::device, nullptr,
                                      &ledger_figures_of, this, ledger_source_of(upstream()));
};

}  // namespace strata::gpu

#endif
