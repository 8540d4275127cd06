// strata GPU caching allocator, private: the allocator's state behind its
// one mutex. The hot paths (allocate, deallocate, caching and reuse) are in
// caching_allocator.cpp, taking and giving back segments in segments.cpp,
// the snapshot in snapshot.cpp, the out-of-memory report in out_of_memory.cpp
// and its replay of the trace ring in what_if.cpp, the answers asked without
// allocating in runtime_answers.cpp, the trace file in trace_file.cpp.
#ifndef STRATA_GPU_SRC_CACHING_ALLOCATOR_STATE_HPP
#define STRATA_GPU_SRC_CACHING_ALLOCATOR_STATE_HPP

#include <strata/gpu/caching_allocator.hpp>

#include "block.hpp"
#include "live_blocks.hpp"
#include "trace_file.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::gpu {

namespace caching {

// Round up to a multiple of `to` (any positive step).
inline std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// The smallest block, and the step requests round to.
inline constexpr std::size_t min_block = 512;

// The block size a request is served with: 512-byte steps, or the next of
// `divisions` equal steps between the powers of two around it when that step
// is coarser.
inline std::size_t round_size(std::size_t bytes, std::size_t divisions) {
  if (bytes <= min_block) return min_block;
  if (divisions > 1) {
    const std::size_t floor = std::bit_floor(bytes);
    const std::size_t step = floor / divisions;
    if (floor != bytes && step > min_block) return round_up(bytes, step);
  }
  return round_up(bytes, min_block);
}

// The place in the device's memory of a block, for keys, traces and snapshots.
inline std::uintptr_t address_of(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// Add `delta` to one quantity, keeping its peak and its running totals.
inline void change(caching_stat& stat, std::int64_t delta) {
  stat.current += delta;
  if (delta > 0) {
    stat.allocated += delta;
    stat.peak = std::max(stat.peak, stat.current);
  } else {
    stat.freed -= delta;
  }
}

// A segment as the device handed it out; its first block never merges away.
// An expandable segment is a reservation of `span` bytes whose first `size`
// bytes are mapped, one granule per mapping; its blocks cover just those.
struct segment_record {
  std::size_t size;
  stream_ref on;
  pool_kind kind;
  pool_number pool;
  block* head;
  std::size_t span = 0;  // 0: memory from the device's allocate

  bool expandable() const noexcept { return span != 0; }
};

// An event recorded on a stream, and the freed blocks that wait for it.
// `owned` events go back to the spares once done; a destroyed stream's
// retirement event belongs to the retired map instead.
struct pending_event {
  event marker;
  bool owned;
  std::vector<block*> blocks;
};

// A graph pool: its allocations, while `allocating`, are the filter's streams'.
struct graph_pool {
  graph_pool_id id;
  pool_number number;
  std::function<bool(stream)> filter;
  bool allocating;
  std::uint64_t begun_at;  // the clock at begin, when the device was idle
};

}  // namespace caching

struct caching_allocator::state {
  using block = caching::block;
  using free_blocks = caching::free_blocks;
  using pool_kind = caching::pool_kind;
  using pool_number = caching::pool_number;
  using segment_record = caching::segment_record;
  using stream_ref = caching::stream_ref;

  device& dev;
  caching_config config;
  mutable std::mutex mutex;
  free_blocks small_free;
  free_blocks large_free;
  caching::live_blocks live;
  std::vector<block*> spare_blocks;                 // retired blocks, reused
  std::vector<free_blocks::node_type> spare_nodes;  // free-set nodes, reused
  std::map<std::uintptr_t, segment_record> segments;
  std::vector<caching::pending_event> pending;
  std::vector<event> spare_events;
  std::unordered_map<stream_id, event> retired;  // destroyed streams' last events
  std::vector<block*> deferred;  // freed during a capture, their events not yet recorded
  std::vector<caching::graph_pool> graph_pools;
  pool_number next_pool = 1;
  event hop{};  // recorded on a freeing stream for another stream to wait on
  caching_stats stats;
  std::vector<trace_entry> ring;
  std::size_t ring_next = 0;
  std::uint64_t sequence = 0;
  std::unique_ptr<caching::trace_file> trace_out;  // STRATA_GPU_TRACE's file, when set
  std::uint64_t clock = 0;                         // counts frees, to age free segments
  std::mutex observers_mutex;  // the OOM observers, called without the allocator's lock
  std::vector<std::pair<std::uint64_t, std::function<void(const out_of_memory_report&)>>> observers;
  std::uint64_t next_observer = 1;

  state(device& d, caching_config c);

  // ---- streams (streams.cpp) -------------------------------------------------
  // What `s` is, as the allocator keeps it.
  stream_ref identify(stream s);
  // Record `e` where it completes after the work queued on `s` so far: on
  // `s`, or for another thread's per-thread stream on the legacy stream (which
  // waits for every blocking stream). False when `s` is gone.
  bool record_on(event e, const stream_ref& s);
  // An event marking the work queued on `s` so far (its retirement event for a
  // destroyed stream); none when `s` is gone. `owned`: a spare to give back.
  std::optional<event> mark(const stream_ref& s, bool& owned);
  // Wait on the host for the work queued on these streams (the whole device
  // when one of them is gone).
  void wait_for(const std::vector<stream_ref>& streams);
  // Every cached block of stream `id` is free of queued work now.
  void settle(stream_id id);
  // stream_destroyed: events for what is cached with `s` and what it holds.
  void retire(stream s);

  // ---- blocks -----------------------------------------------------------------
  // A block, reusing a retired one so the hot path does not allocate.
  block* make_block(char* p, std::size_t bytes, const stream_ref& s, pool_kind kind,
                    pool_number pool);

  // Keep a block that merged away or left with its segment for reuse.
  void retire_block(block* b);

  // Put a block in its pool's free set on a reused node when there is one.
  void insert_free(block* b);

  // The free set of a pool kind.
  free_blocks& pool(pool_kind kind);

  // The statistics of a pool kind.
  caching_pool_stats& pool_stats(pool_kind kind);

  // Count a change in the pool of `kind` and in all.
  void change(pool_kind kind, caching_stat caching_pool_stats::*field, std::int64_t delta);

  // Keep one action in the ring, overwriting the oldest when full, and write
  // it to the trace file when there is one. `requested`: alloc's and oom's bytes asked for.
  void record_trace(trace_action action, const void* p, std::size_t size, stream on,
                    std::size_t requested = 0);

  // Whether a cached block may serve a request: one above max_split_size
  // serves only requests of similar size, so it is not carved up.
  bool fits(const block* b, std::size_t size) const;

  // Whether handing out `size` of `b` leaves a remainder worth caching apart.
  bool should_split(const block* b, std::size_t size) const;

  // A block leaves the free set: it no longer counts as inactive.
  void uncache(free_blocks::iterator it);

  // The best fit in `pool` cached with stream `id`, taken out of the cache.
  block* take_cached(pool_number pool, pool_kind kind, stream_id id, std::size_t size);

  // The best fit cached with another stream, once `s` waits on an event
  // recorded on that stream now: everything queued there before, the work
  // that used the block included, then comes before the work `s` queues next.
  block* borrow(pool_kind kind, const stream_ref& s, std::size_t size);

  // The bytes of the segment a request of `size` gets when nothing cached fits.
  std::size_t segment_size(pool_kind kind, std::size_t size) const;

  // A new segment from the device, as one block for `s`; on running out, the
  // cache goes back to the device and the device is asked once more.
  block* new_segment(pool_kind kind, const stream_ref& s, std::size_t size, std::size_t requested,
                     pool_number pool);

  // Hand out the front of `b`, caching the rest apart when it is worth it.
  void* hand_out(block* b, std::size_t size, std::size_t requested);

  // The allocation path: the stream's cache, settled blocks, another
  // stream's, then the device; a graph pool's stream takes from its pool.
  void* allocate(std::size_t bytes, stream s);

  // A pointer that is no live block is the caller's error.
  [[noreturn]] static void throw_foreign(const char* call);

  // The live block at `p`.
  block* find_live(void* p, const char* call);

  // The free path: straight back to the cache, or after events on the other
  // streams that used the block complete.
  void deallocate(void* p, const stream* on);

  // Record the events a freed block waits for (on the streams of its uses),
  // or cache it when there are none.
  void finish_free(block* b);

  // An event to mark a stream with, reused from earlier frees when possible.
  event spare_event();

  // Put a block that is free of all pending work back in the cache, merged
  // with free neighbours cached with the same stream (the lower block stays,
  // so a segment's first block never goes away).
  void cache(block* b);

  // Merge `upper`, the next block after `lower`, into `lower`.
  void absorb(block* lower, block* upper);

  // Cache the blocks whose events have completed; with `wait`, wait for them
  // all first (the host blocks: only empty_cache and out-of-memory do this).
  void collect_events(bool wait);

  // ---- segments (segments.cpp) --------------------------------------------------
  // Whether every block of the segment is cached, so it can go back.
  static bool all_cached(const segment_record& segment);

  // The streams that last used a segment's blocks.
  static std::vector<stream_ref> streams_of(const segment_record& segment);

  // Hand a segment's memory back to the device (unmapping an expandable one).
  void give_back(std::uintptr_t address, const segment_record& segment);

  // Give one fully free segment back to the device; the caller has waited
  // for the streams that used it.
  std::map<std::uintptr_t, segment_record>::iterator release(
      std::map<std::uintptr_t, segment_record>::iterator it);

  // empty_cache: wait for pending frees, then give back every fully free
  // segment of the allocator's own pool.
  void release_cached();

  // Before a new segment of `bytes` lifts the reserved bytes above the
  // threshold, give back whole free segments, longest free first.
  void collect_garbage(std::size_t bytes);

  // ---- expandable segments (expandable_segments.cpp) -------------------------------
  // The miss path with expandable segments: grow the segment of `s` and
  // `kind` so a block of `size` ends it; on running out, the cache goes back
  // to the device and the device is asked once more.
  block* grow(pool_kind kind, const stream_ref& s, std::size_t size, std::size_t requested);
  // Map enough granules at the end of the segment of `s` and `kind` (reserved
  // now if there is none) for a block of `size` there; null when the device
  // is out of memory, with what this call mapped unmapped again.
  block* try_grow(pool_kind kind, const stream_ref& s, std::size_t size);
  // Unmap the whole granules of the free block at the end of an expandable
  // segment (the caller has waited for its stream); the segment goes when
  // nothing is left mapped. The next segment.
  std::map<std::uintptr_t, segment_record>::iterator shrink(
      std::map<std::uintptr_t, segment_record>::iterator it);
  // Unmap [base + from, base + to) granule by granule, counting it.
  void unmap_range(std::uintptr_t base, segment_record& segment, std::size_t from, std::size_t to);
  // A free block goes back into its pool's free set, counted as cached.
  void recache(block* b);
  // The device's granule for mappings, asked once.
  std::size_t granule = 0;

  // ---- graph pools (graph_pools.cpp) ------------------------------------------------
  // Whether a graph pool is allocating: a capture may be under way.
  bool capturing() const;
  // The graph pool whose filter takes `s`, or 0.
  pool_number pool_for(stream s) const;
  // A block of a graph pool for `s`: its own cache, then a segment of the
  // allocator's pool that was idle when the pool began; never the device.
  block* take_for_graph(pool_number pool, pool_kind kind, const stream_ref& s, std::size_t size,
                        std::size_t requested);
  // A cached block moves to another pool or stream.
  void rekey(block* b, pool_number pool, const stream_ref& s);
  // The frees a capture held back, now that none is under way.
  void finish_deferred();
  caching::graph_pool* find_pool(graph_pool_id id);

  // The free cached blocks' total and the largest of them.
  std::pair<std::size_t, std::size_t> free_extent() const;

  // Segments holding free bytes beside blocks in use, most stranded first.
  std::vector<stranded_segment> stranded_segments() const;

  // Out of memory for good: count it, trace it, and throw the report.
  [[noreturn]] void fail(std::size_t requested, std::size_t size, stream s);

  // ---- answers without allocating (runtime_answers.cpp) ------------------------------
  // Bytes a new segment may take: the device's free memory and the whole
  // free segments a retry gives back (none for a capturing graph pool).
  std::size_t segment_room();
  // The largest request that a free block of `bytes` (or a new segment of
  // that many bytes) serves.
  std::size_t largest_served_by(std::size_t bytes) const;
  // largest_allocatable and would_fit, under the lock.
  std::size_t largest_for(stream s);
  bool fits_now(std::size_t bytes, stream s);
  // Call the OOM observers; the lock is not held.
  void notify_observers(const out_of_memory_report& report);

  // ---- the out-of-memory report's what-if (what_if.cpp) --------------------------------
  // The ring as a device trace, the blocks live before its oldest entry
  // allocated first, ending with the failed request (the ring's last entry).
  std::vector<trace::device_record> ring_as_trace() const;
  // The configuration change under which that trace's replay serves the
  // request, or empty; `replayed`: the records the replay used.
  std::string avoiding_config(std::size_t& replayed);

  // Every segment and block as they are now, with the trace and statistics.
  memory_snapshot take_snapshot() const;

  // The ring, oldest first.
  std::vector<trace_entry> ordered_trace() const;

  // Give everything back: the device first finishes all work.
  ~state();
};

// The free set of a pool.
inline caching::free_blocks& caching_allocator::state::pool(pool_kind kind) {
  return kind == pool_kind::small ? small_free : large_free;
}

// The statistics of a pool.
inline caching_pool_stats& caching_allocator::state::pool_stats(pool_kind kind) {
  return kind == pool_kind::small ? stats.small : stats.large;
}

// Count a change in the pool of `kind` and in all.
inline void caching_allocator::state::change(pool_kind kind,
                                             caching_stat caching_pool_stats::*field,
                                             std::int64_t delta) {
  caching::change(stats.all.*field, delta);
  caching::change(pool_stats(kind).*field, delta);
}

// Keep one action in the ring, overwriting the oldest when full.
inline void caching_allocator::state::record_trace(trace_action action, const void* p,
                                                   std::size_t size, stream on,
                                                   std::size_t requested) {
  if (config.trace_capacity == 0 && trace_out == nullptr) return;
  const trace_entry entry{action, caching::address_of(p), size, on, sequence++, requested};
  if (trace_out != nullptr) trace_out->write(entry);
  if (config.trace_capacity == 0) return;
  if (ring.size() < config.trace_capacity) {
    ring.push_back(entry);
  } else {
    ring[ring_next] = entry;
    ring_next = (ring_next + 1) % config.trace_capacity;
  }
}

// A block, reusing a retired one so the hot path does not allocate.
inline caching::block* caching_allocator::state::make_block(char* p, std::size_t bytes,
                                                            const stream_ref& s, pool_kind kind,
                                                            pool_number pool) {
  if (spare_blocks.empty()) return new block(p, bytes, s, kind, pool);
  block* b = spare_blocks.back();
  spare_blocks.pop_back();
  *b = block(p, bytes, s, kind, pool);
  return b;
}

// Keep a block that merged away or left with its segment for reuse.
inline void caching_allocator::state::retire_block(block* b) {
  spare_blocks.push_back(b);
}

// A block leaves the free set: it no longer counts as inactive.
inline void caching_allocator::state::uncache(free_blocks::iterator it) {
  block* b = *it;
  spare_nodes.push_back(pool(b->kind).extract(it));
  if (b->split()) {
    change(b->kind, &caching_pool_stats::inactive_split, -1);
    change(b->kind, &caching_pool_stats::inactive_split_bytes, -static_cast<std::int64_t>(b->size));
  }
}

// Put a block in its pool's free set on a reused node when there is one.
inline void caching_allocator::state::insert_free(block* b) {
  free_blocks& set = pool(b->kind);
  if (spare_nodes.empty()) {
    set.insert(b);
    return;
  }
  free_blocks::node_type node = std::move(spare_nodes.back());
  spare_nodes.pop_back();
  node.value() = b;
  set.insert(std::move(node));
}

}  // namespace strata::gpu

#endif
