#include <strata/gpu/caching_allocator.hpp>

#include "block.hpp"
#include "live_blocks.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

namespace strata::gpu {

namespace {

using caching::block;
using caching::block_key;
using caching::free_blocks;
using caching::key_of;
using caching::pool_kind;

constexpr std::size_t min_block = 512;

// Round up to a multiple of `to` (any positive step).
std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// The block size a request is served with: 512-byte steps, or the next of
// `divisions` equal steps between the powers of two around it when that step
// is coarser.
std::size_t round_size(std::size_t bytes, std::size_t divisions) {
  if (bytes <= min_block) return min_block;
  if (divisions > 1) {
    const std::size_t floor = std::bit_floor(bytes);
    const std::size_t step = floor / divisions;
    if (floor != bytes && step > min_block) return round_up(bytes, step);
  }
  return round_up(bytes, min_block);
}

// Add `delta` to one quantity, keeping its peak and its running totals.
void change(caching_stat& stat, std::int64_t delta) {
  stat.current += delta;
  if (delta > 0) {
    stat.allocated += delta;
    stat.peak = std::max(stat.peak, stat.current);
  } else {
    stat.freed -= delta;
  }
}

// Apply `reset` to every quantity of a pool.
template <class Reset>
void for_each_stat(caching_pool_stats& pool, Reset reset) {
  for (caching_stat* stat : {&pool.segment, &pool.allocation, &pool.active, &pool.inactive_split,
                             &pool.reserved_bytes, &pool.allocated_bytes, &pool.active_bytes,
                             &pool.inactive_split_bytes, &pool.requested_bytes})
    reset(*stat);
}

// The place in the device's memory of a block, for traces and snapshots.
std::uintptr_t address_of(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

// A segment as the device handed it out; its first block never merges away.
struct segment_record {
  std::size_t size;
  stream on;
  pool_kind kind;
  block* head;
};

// A block freed while events on other streams were still to complete.
struct pending_free {
  event marker;
  block* freed;
};

struct caching_allocator::state {
  device& dev;
  caching_config config;
  mutable std::mutex mutex;
  free_blocks small_free;
  free_blocks large_free;
  caching::live_blocks live;
  std::vector<block*> spare_blocks;                 // retired blocks, reused
  std::vector<free_blocks::node_type> spare_nodes;  // free-set nodes, reused
  std::map<std::uintptr_t, segment_record> segments;
  std::vector<pending_free> pending;
  std::vector<event> spare_events;
  event hop{};  // recorded on a freeing stream for another stream to wait on
  caching_stats stats;
  std::vector<trace_entry> ring;
  std::size_t ring_next = 0;
  std::uint64_t sequence = 0;
  std::uint64_t clock = 0;  // counts frees, to age free segments

  state(device& d, caching_config c) : dev(d), config(c) { ring.reserve(config.trace_capacity); }

  // A block, reusing a retired one so the hot path does not allocate.
  block* make_block(char* p, std::size_t bytes, stream s, pool_kind kind) {
    if (spare_blocks.empty()) return new block(p, bytes, s, kind);
    block* b = spare_blocks.back();
    spare_blocks.pop_back();
    *b = block(p, bytes, s, kind);
    return b;
  }

  // Keep a block that merged away or left with its segment for reuse.
  void retire(block* b) { spare_blocks.push_back(b); }

  // Put a block in its pool's free set on a reused node when there is one.
  void insert_free(block* b) {
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

  free_blocks& pool(pool_kind kind) { return kind == pool_kind::small ? small_free : large_free; }

  caching_pool_stats& pool_stats(pool_kind kind) {
    return kind == pool_kind::small ? stats.small : stats.large;
  }

  // Count a change in the pool of `kind` and in all.
  void change(pool_kind kind, caching_stat caching_pool_stats::*field, std::int64_t delta) {
    gpu::change(stats.all.*field, delta);
    gpu::change(pool_stats(kind).*field, delta);
  }

  // Keep one action in the ring, overwriting the oldest when full.
  void record_trace(trace_action action, const void* p, std::size_t size, stream on) {
    if (config.trace_capacity == 0) return;
    const trace_entry entry{action, address_of(p), size, on, sequence++};
    if (ring.size() < config.trace_capacity) {
      ring.push_back(entry);
    } else {
      ring[ring_next] = entry;
      ring_next = (ring_next + 1) % config.trace_capacity;
    }
  }

  // Whether a cached block may serve a request: one above max_split_size
  // serves only requests of similar size, so it is not carved up.
  bool fits(const block* b, std::size_t size) const {
    if (b->kind == pool_kind::small) return true;
    if (size < config.max_split_size) return b->size < config.max_split_size;
    return b->size - size < config.large_segment;
  }

  // Whether handing out `size` of `b` leaves a remainder worth caching apart.
  bool should_split(const block* b, std::size_t size) const {
    const std::size_t remaining = b->size - size;
    if (b->kind == pool_kind::small) return remaining >= min_block;
    return size < config.max_split_size && remaining > config.small_size;
  }

  // A block leaves the free set: it no longer counts as inactive.
  void uncache(free_blocks::iterator it) {
    block* b = *it;
    spare_nodes.push_back(pool(b->kind).extract(it));
    if (b->split()) {
      change(b->kind, &caching_pool_stats::inactive_split, -1);
      change(b->kind, &caching_pool_stats::inactive_split_bytes,
             -static_cast<std::int64_t>(b->size));
    }
  }

  // The best fit cached with `s`, taken out of the cache.
  block* take_cached(pool_kind kind, stream s, std::size_t size) {
    free_blocks& set = pool(kind);
    const auto it = set.lower_bound(key_of(s, size));
    if (it == set.end() || (*it)->on != s || !fits(*it, size)) return nullptr;
    block* b = *it;
    uncache(it);
    return b;
  }

  // The best fit cached with another stream, once `s` waits on an event
  // recorded on that stream now: everything queued there before, the work
  // that used the block included, then comes before the work `s` queues next.
  block* borrow(pool_kind kind, stream s, std::size_t size) {
    free_blocks& set = pool(kind);
    free_blocks::iterator best = set.end();
    for (auto it = set.begin(); it != set.end();) {
      const stream other = (*it)->on;
      if (other != s) {
        const auto fit = set.lower_bound(key_of(other, size));
        if (fit != set.end() && (*fit)->on == other && fits(*fit, size) &&
            (best == set.end() || (*fit)->size < (*best)->size))
          best = fit;
      }
      it = set.upper_bound(block_key{address_of(other.handle),
                                     std::numeric_limits<std::size_t>::max(),
                                     std::numeric_limits<std::uintptr_t>::max()});
    }
    if (best == set.end()) return nullptr;
    if (hop.handle == nullptr) hop = dev.create_event();
    dev.record(hop, (*best)->on);
    dev.wait(s, hop);
    block* b = *best;
    uncache(best);
    b->on = s;
    return b;
  }

  // The bytes of the segment a request of `size` gets when nothing cached fits.
  std::size_t segment_size(pool_kind kind, std::size_t size) const {
    if (kind == pool_kind::small) return config.small_segment;
    if (size < config.min_large_alloc) return config.large_segment;
    return round_up(size, config.large_rounding);
  }

  // A new segment from the device, as one block for `s`; on running out, the
  // cache goes back to the device and the device is asked once more.
  block* new_segment(pool_kind kind, stream s, std::size_t size, std::size_t requested) {
    const std::size_t bytes = segment_size(kind, size);
    if (config.garbage_collection_threshold > 0.0) collect_garbage(bytes);
    void* p = nullptr;
    try {
      p = dev.allocate(bytes);
    } catch (const device_error& first) {
      if (!first.is_out_of_memory()) throw;
      ++stats.num_alloc_retries;
      release_cached();
      try {
        p = dev.allocate(bytes);
      } catch (const device_error& second) {
        if (!second.is_out_of_memory()) throw;
        fail(requested, size, s);
      }
    }
    block* b = make_block(static_cast<char*>(p), bytes, s, kind);
    segments.emplace(address_of(p), segment_record{bytes, s, kind, b});
    ++stats.num_device_allocs;
    change(kind, &caching_pool_stats::segment, 1);
    change(kind, &caching_pool_stats::reserved_bytes, static_cast<std::int64_t>(bytes));
    record_trace(trace_action::segment_alloc, p, bytes, s);
    return b;
  }

  // Hand out the front of `b`, caching the rest apart when it is worth it.
  void* hand_out(block* b, std::size_t size, std::size_t requested) {
    if (should_split(b, size)) {
      block* rest = make_block(b->ptr + size, b->size - size, b->on, b->kind);
      rest->prev = b;
      rest->next = b->next;
      if (b->next != nullptr) b->next->prev = rest;
      b->next = rest;
      b->size = size;
      rest->freed_at = clock;
      insert_free(rest);
      change(b->kind, &caching_pool_stats::inactive_split, 1);
      change(b->kind, &caching_pool_stats::inactive_split_bytes,
             static_cast<std::int64_t>(rest->size));
    }
    b->allocated = true;
    b->requested = requested;
    live.insert(b);
    const auto bytes = static_cast<std::int64_t>(b->size);
    change(b->kind, &caching_pool_stats::allocation, 1);
    change(b->kind, &caching_pool_stats::allocated_bytes, bytes);
    change(b->kind, &caching_pool_stats::active, 1);
    change(b->kind, &caching_pool_stats::active_bytes, bytes);
    change(b->kind, &caching_pool_stats::requested_bytes, static_cast<std::int64_t>(requested));
    record_trace(trace_action::alloc, b->ptr, b->size, b->on);
    return b->ptr;
  }

  // The allocation path: the stream's cache, another stream's, then the device.
  void* allocate(std::size_t bytes, stream s) {
    if (!pending.empty()) collect_events(false);
    if (bytes > std::numeric_limits<std::size_t>::max() / 2) fail(bytes, bytes, s);
    const std::size_t size = round_size(bytes, config.roundup_power2_divisions);
    const pool_kind kind = size <= config.small_size ? pool_kind::small : pool_kind::large;
    block* b = take_cached(kind, s, size);
    if (b != nullptr) {
      ++stats.cache_hits;
    } else if ((b = borrow(kind, s, size)) != nullptr) {
      ++stats.cache_hits;
      ++stats.cross_stream_reuses;
    } else {
      b = new_segment(kind, s, size, bytes);
      ++stats.cache_misses;
    }
    return hand_out(b, size, bytes);
  }

  // A pointer that is no live block is the caller's error.
  [[noreturn]] static void throw_foreign(const char* call) {
    throw device_error(errc::invalid_argument, std::string("caching_allocator: ") + call +
                                                   " of memory it did not hand out");
  }

  // The live block at `p`.
  block* find_live(void* p, const char* call) {
    block* b = live.find(p);
    if (b == nullptr) throw_foreign(call);
    return b;
  }

  // The free path: straight back to the cache, or after events on the other
  // streams that used the block complete.
  void deallocate(void* p, const stream* on) {
    block* b = live.take(p);
    if (b == nullptr) throw_foreign("deallocate");
    b->allocated = false;
    const auto bytes = static_cast<std::int64_t>(b->size);
    change(b->kind, &caching_pool_stats::allocation, -1);
    change(b->kind, &caching_pool_stats::allocated_bytes, -bytes);
    change(b->kind, &caching_pool_stats::requested_bytes, -static_cast<std::int64_t>(b->requested));
    b->requested = 0;
    if (on != nullptr) b->on = *on;
    record_trace(trace_action::free_requested, b->ptr, b->size, b->on);
    std::erase(b->uses, b->on);
    for (const stream use : b->uses) {
      const event marker = spare_event();
      dev.record(marker, use);
      pending.push_back({marker, b});
      ++b->pending_events;
    }
    b->uses.clear();
    if (b->pending_events == 0) cache(b);
  }

  // An event to mark a stream with, reused from earlier frees when possible.
  event spare_event() {
    if (spare_events.empty()) return dev.create_event();
    const event e = spare_events.back();
    spare_events.pop_back();
    return e;
  }

  // Put a block that is free of all pending work back in the cache, merged
  // with free neighbours cached with the same stream (the lower block stays,
  // so a segment's first block never goes away).
  void cache(block* b) {
    change(b->kind, &caching_pool_stats::active, -1);
    change(b->kind, &caching_pool_stats::active_bytes, -static_cast<std::int64_t>(b->size));
    free_blocks& set = pool(b->kind);
    if (block* prev = b->prev; prev != nullptr && prev->cached() && prev->on == b->on) {
      uncache(set.find(prev));
      absorb(prev, b);
      b = prev;
    }
    if (block* next = b->next; next != nullptr && next->cached() && next->on == b->on) {
      uncache(set.find(next));
      absorb(b, next);
    }
    b->freed_at = ++clock;
    if (b->split()) {
      change(b->kind, &caching_pool_stats::inactive_split, 1);
      change(b->kind, &caching_pool_stats::inactive_split_bytes,
             static_cast<std::int64_t>(b->size));
    }
    insert_free(b);
    record_trace(trace_action::free_completed, b->ptr, b->size, b->on);
  }

  // Merge `upper`, the next block after `lower`, into `lower`.
  void absorb(block* lower, block* upper) {
    lower->size += upper->size;
    lower->next = upper->next;
    if (upper->next != nullptr) upper->next->prev = lower;
    retire(upper);
  }

  // Cache the blocks whose events have completed; with `wait`, wait for them
  // all first (the host blocks: only empty_cache and out-of-memory do this).
  void collect_events(bool wait) {
    for (std::size_t i = 0; i < pending.size();) {
      const pending_free done = pending[i];
      if (wait) {
        dev.synchronize(done.marker);
      } else if (!dev.query(done.marker)) {
        ++i;
        continue;
      }
      pending[i] = pending.back();
      pending.pop_back();
      spare_events.push_back(done.marker);
      if (--done.freed->pending_events == 0) cache(done.freed);
    }
  }

  // Whether every block of the segment is cached, so it can go back.
  static bool all_cached(const segment_record& segment) {
    for (const block* b = segment.head; b != nullptr; b = b->next)
      if (!b->cached()) return false;
    return true;
  }

  // Give one fully free segment back to the device.
  std::map<std::uintptr_t, segment_record>::iterator release(
      std::map<std::uintptr_t, segment_record>::iterator it) {
    const segment_record segment = it->second;
    dev.deallocate(segment.head->ptr);
    for (block* b = segment.head; b != nullptr;) {
      block* next = b->next;
      uncache(pool(b->kind).find(b));
      retire(b);
      b = next;
    }
    ++stats.num_device_frees;
    change(segment.kind, &caching_pool_stats::segment, -1);
    change(segment.kind, &caching_pool_stats::reserved_bytes,
           -static_cast<std::int64_t>(segment.size));
    record_trace(trace_action::segment_free, reinterpret_cast<void*>(it->first), segment.size,
                 segment.on);
    return segments.erase(it);
  }

  // empty_cache: wait for pending frees, then give back every fully free segment.
  void release_cached() {
    collect_events(true);
    for (auto it = segments.begin(); it != segments.end();)
      it = all_cached(it->second) ? release(it) : std::next(it);
  }

  // Before a new segment of `bytes` lifts the reserved bytes above the
  // threshold, give back whole free segments, longest free first.
  void collect_garbage(std::size_t bytes) {
    const auto limit =
        static_cast<double>(dev.memory().total) * config.garbage_collection_threshold;
    const auto over = [&] {
      return static_cast<double>(stats.all.reserved_bytes.current) + static_cast<double>(bytes) >
             limit;
    };
    if (!over()) return;
    std::vector<std::pair<std::uint64_t, std::uintptr_t>> idle;
    for (const auto& [address, segment] : segments)
      if (!segment.head->split() && segment.head->cached())
        idle.emplace_back(segment.head->freed_at, address);
    std::sort(idle.begin(), idle.end());
    for (const auto& candidate : idle) {
      if (!over()) break;
      release(segments.find(candidate.second));
    }
  }

  // The free cached blocks' total and the largest of them.
  std::pair<std::size_t, std::size_t> free_extent() const {
    std::size_t total = 0;
    std::size_t largest = 0;
    for (const free_blocks* set : {&small_free, &large_free})
      for (const block* b : *set) {
        total += b->size;
        largest = std::max(largest, b->size);
      }
    return {total, largest};
  }

  // Out of memory for good: count it, trace it and throw the report.
  [[noreturn]] void fail(std::size_t requested, std::size_t size, stream s) {
    ++stats.num_ooms;
    record_trace(trace_action::oom, nullptr, size, s);
    out_of_memory_report report;
    report.requested = requested;
    report.rounded = size;
    report.allocated = static_cast<std::size_t>(stats.all.allocated_bytes.current);
    report.reserved = static_cast<std::size_t>(stats.all.reserved_bytes.current);
    const auto [free_total, largest] = free_extent();
    report.largest_free = largest;
    report.fragmentation =
        free_total == 0 ? 0.0
                        : 1.0 - static_cast<double>(largest) / static_cast<double>(free_total);
    memory_snapshot shot = take_snapshot();
    report.device_free = shot.device_free;
    report.device_total = shot.device_total;
    throw out_of_memory_error(report, to_json(shot));
  }

  // Every segment and block as they are now, with the trace and statistics.
  memory_snapshot take_snapshot() const {
    memory_snapshot shot;
    for (const auto& [address, segment] : segments) {
      segment_info info{
          address, segment.size, segment.on, segment.kind == pool_kind::small, 0, 0, 0, {}};
      for (const block* b = segment.head; b != nullptr; b = b->next) {
        const block_state state = b->allocated             ? block_state::active_allocated
                                  : b->pending_events != 0 ? block_state::active_pending_free
                                                           : block_state::inactive;
        if (b->allocated) info.allocated += b->size;
        if (state != block_state::inactive) info.active += b->size;
        info.requested += b->requested;
        info.blocks.push_back({address_of(b->ptr), address_of(b->ptr) - address, b->size,
                               b->requested, state, b->on});
      }
      shot.segments.push_back(std::move(info));
    }
    shot.trace = ordered_trace();
    shot.stats = stats;
    const memory_info memory = dev.memory();
    shot.device_total = memory.total;
    shot.device_free = memory.free;
    return shot;
  }

  // The ring, oldest first.
  std::vector<trace_entry> ordered_trace() const {
    std::vector<trace_entry> out(ring.begin() + static_cast<std::ptrdiff_t>(ring_next), ring.end());
    out.insert(out.end(), ring.begin(), ring.begin() + static_cast<std::ptrdiff_t>(ring_next));
    return out;
  }

  // Give everything back: the device first finishes all work.
  ~state() {
    try {
      dev.synchronize();
      for (const pending_free& p : pending) dev.destroy_event(p.marker);
      for (const event e : spare_events) dev.destroy_event(e);
      if (hop.handle != nullptr) dev.destroy_event(hop);
      for (const auto& [address, segment] : segments) {
        dev.deallocate(segment.head->ptr);
        for (block* b = segment.head; b != nullptr;) {
          block* next = b->next;
          delete b;
          b = next;
        }
      }
    } catch (const device_error&) {
      // A device that fails while shutting down leaves nothing to give back to.
    }
    for (block* b : spare_blocks) delete b;
  }
};

caching_allocator::caching_allocator(device& dev, caching_config config)
    : state_(std::make_unique<state>(dev, config)) {}

caching_allocator::~caching_allocator() = default;

// The hot path: one lock around the cache.
void* caching_allocator::allocate(std::size_t bytes, stream s) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(state_->mutex);
  return state_->allocate(bytes, s);
}

// Free in the order of `s`, caching the block with `s`.
void caching_allocator::deallocate(void* p, std::size_t, stream s) {
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  state_->deallocate(p, &s);
}

// Free in the order of the stream the block was allocated on.
void caching_allocator::deallocate(void* p) {
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  state_->deallocate(p, nullptr);
}

// A block from the default stream's cache, once the work queued there is done,
// so any stream may use it.
void* caching_allocator::allocate_sync(std::size_t bytes) {
  void* p = allocate(bytes, stream{});
  state_->dev.synchronize(stream{});
  return p;
}

// Wait for the device, so the block may be reused on any stream at once.
void caching_allocator::deallocate_sync(void* p, std::size_t bytes) {
  state_->dev.synchronize();
  deallocate(p, bytes, stream{});
}

// Remember one more stream whose work must finish before the block's reuse.
void caching_allocator::record_stream(void* p, stream s) {
  std::lock_guard lock(state_->mutex);
  block* b = state_->find_live(p, "record_stream");
  if (s != b->on && std::find(b->uses.begin(), b->uses.end(), s) == b->uses.end())
    b->uses.push_back(s);
}

void caching_allocator::empty_cache() {
  std::lock_guard lock(state_->mutex);
  state_->release_cached();
}

caching_stats caching_allocator::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

void caching_allocator::reset_peak_stats() {
  std::lock_guard lock(state_->mutex);
  for (caching_pool_stats* pool : {&state_->stats.all, &state_->stats.small, &state_->stats.large})
    for_each_stat(*pool, [](caching_stat& stat) { stat.peak = stat.current; });
}

void caching_allocator::reset_accumulated_stats() {
  std::lock_guard lock(state_->mutex);
  caching_stats& stats = state_->stats;
  for (caching_pool_stats* pool : {&stats.all, &stats.small, &stats.large})
    for_each_stat(*pool, [](caching_stat& stat) { stat.allocated = stat.freed = 0; });
  stats.cache_hits = stats.cache_misses = stats.cross_stream_reuses = 0;
  stats.num_alloc_retries = stats.num_ooms = 0;
  stats.num_device_allocs = stats.num_device_frees = 0;
}

std::vector<trace_entry> caching_allocator::trace() const {
  std::lock_guard lock(state_->mutex);
  return state_->ordered_trace();
}

memory_snapshot caching_allocator::snapshot() const {
  std::lock_guard lock(state_->mutex);
  return state_->take_snapshot();
}

const caching_config& caching_allocator::config() const noexcept {
  return state_->config;
}

device& caching_allocator::upstream() const noexcept {
  return state_->dev;
}

}  // namespace strata::gpu
