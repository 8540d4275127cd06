#include <strata/gpu/caching_allocator.hpp>

#include "allocator_state.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace strata::gpu {

namespace {

using caching::address_of;
using caching::block;
using caching::block_key;
using caching::free_blocks;
using caching::key_of;
using caching::min_block;
using caching::pool_kind;
using caching::pool_number;
using caching::round_size;
using caching::round_up;
using caching::stream_ref;

// Apply `reset` to every quantity of a pool.
template <class Reset>
void for_each_stat(caching_pool_stats& pool, Reset reset) {
  for (caching_stat* stat : {&pool.segment, &pool.allocation, &pool.active, &pool.inactive_split,
                             &pool.reserved_bytes, &pool.allocated_bytes, &pool.active_bytes,
                             &pool.inactive_split_bytes, &pool.requested_bytes})
    reset(*stat);
}

}  // namespace

caching_allocator::state::state(device& d, caching_config c) : dev(d), config(std::move(c)) {
  ring.reserve(config.trace_capacity);
  if (!config.trace_path.empty())
    trace_out = std::make_unique<caching::trace_file>(config.trace_path, dev.ordinal());
}

// Whether a cached block may serve a request: one above max_split_size
// serves only requests of similar size, so it is not carved up.
bool caching_allocator::state::fits(const block* b, std::size_t size) const {
  if (b->kind == pool_kind::small) return true;
  if (size < config.max_split_size) return b->size < config.max_split_size;
  return b->size - size < config.large_segment;
}

// Whether handing out `size` of `b` leaves a remainder worth caching apart.
bool caching_allocator::state::should_split(const block* b, std::size_t size) const {
  const std::size_t remaining = b->size - size;
  if (b->kind == pool_kind::small) return remaining >= min_block;
  return size < config.max_split_size && remaining > config.small_size;
}

// The best fit in `pool` cached with stream `id`, taken out of the cache.
block* caching_allocator::state::take_cached(pool_number pool, pool_kind kind, stream_id id,
                                             std::size_t size) {
  free_blocks& set = this->pool(kind);
  const auto it = set.lower_bound(key_of(pool, id, size));
  if (it == set.end() || (*it)->pool != pool || (*it)->on.id != id || !fits(*it, size))
    return nullptr;
  block* b = *it;
  uncache(it);
  return b;
}

// The best fit cached with another stream, once `s` waits on an event
// recorded on that stream now: everything queued there before, the work
// that used the block included, then comes before the work `s` queues next.
// A stream that is gone cannot be marked: the device is waited for, and its
// blocks are settled.
block* caching_allocator::state::borrow(pool_kind kind, const stream_ref& s, std::size_t size) {
  free_blocks& set = pool(kind);
  free_blocks::iterator best = set.end();
  for (auto it = set.begin(); it != set.end() && (*it)->pool == 0;) {
    const stream_id other = (*it)->on.id;
    if (other != s.id && other != 0) {
      const auto fit = set.lower_bound(key_of(0, other, size));
      if (fit != set.end() && (*fit)->pool == 0 && (*fit)->on.id == other && fits(*fit, size) &&
          (best == set.end() || (*fit)->size < (*best)->size))
        best = fit;
    }
    it = set.upper_bound(block_key{0, other, std::numeric_limits<std::size_t>::max(),
                                   std::numeric_limits<std::uintptr_t>::max()});
  }
  if (best == set.end()) return nullptr;
  const stream_ref owner = (*best)->on;
  if (hop.handle == nullptr) hop = dev.create_event();
  if (!record_on(hop, owner)) {
    dev.synchronize();
    settle(owner.id);
    return take_cached(0, kind, 0, size);
  }
  dev.wait(s.handle, hop);
  block* b = *best;
  uncache(best);
  b->on = s;
  return b;
}

// Hand out the front of `b`, caching the rest apart when it is worth it.
void* caching_allocator::state::hand_out(block* b, std::size_t size, std::size_t requested) {
  if (should_split(b, size)) {
    block* rest = make_block(b->ptr + size, b->size - size, b->on, b->kind, b->pool);
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    rest->freed_at = b->freed_at;
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
  record_trace(trace_action::alloc, b->ptr, b->size, b->on.handle, requested);
  return b->ptr;
}

// The allocation path: the stream's cache, settled blocks, another stream's,
// then the device. While a capture may be under way no event is queried; a
// graph pool's stream takes from its pool, and any other capturing stream is refused.
void* caching_allocator::state::allocate(std::size_t bytes, stream s) {
  const bool capture = capturing();
  if (!capture) {
    if (!deferred.empty()) finish_deferred();
    if (!pending.empty()) collect_events(false);
  }
  const stream_ref on = identify(s);
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) fail(bytes, bytes, s);
  const std::size_t size = round_size(bytes, config.roundup_power2_divisions);
  const pool_kind kind = size <= config.small_size ? pool_kind::small : pool_kind::large;
  if (capture)
    if (const pool_number graph = pool_for(s); graph != 0)
      return hand_out(take_for_graph(graph, kind, on, size, bytes), size, bytes);
  if (dev.capture_state(s) != capture_status::none)
    throw device_error(errc::capture,
                       "caching_allocator: allocation on a capturing stream outside a graph pool "
                       "(call begin_allocate_to_pool before the capture begins)");
  block* b = take_cached(0, kind, on.id, size);
  if (b != nullptr) {
    ++stats.cache_hits;
  } else if ((b = take_cached(0, kind, 0, size)) != nullptr) {
    b->on = on;
    ++stats.cache_hits;
  } else if ((b = borrow(kind, on, size)) != nullptr) {
    ++stats.cache_hits;
    ++stats.cross_stream_reuses;
  } else {
    b = config.expandable_segments ? grow(kind, on, size, bytes)
                                   : new_segment(kind, on, size, bytes, 0);
    ++stats.cache_misses;
  }
  return hand_out(b, size, bytes);
}

// A pointer that is no live block is the caller's error.
[[noreturn]] void caching_allocator::state::throw_foreign(const char* call) {
  throw device_error(errc::invalid_argument,
                     std::string("caching_allocator: ") + call + " of memory it did not hand out");
}

// The live block at `p`.
block* caching_allocator::state::find_live(void* p, const char* call) {
  block* b = live.find(p);
  if (b == nullptr) throw_foreign(call);
  return b;
}

// The free path: straight back to the cache, or after events on the other
// streams that used the block complete. During a capture those events wait
// (the block meanwhile counts as pending) until no capture is under way.
void caching_allocator::state::deallocate(void* p, const stream* on) {
  block* b = live.find(p);
  if (b == nullptr) throw_foreign("deallocate");
  stream_ref freeing = b->on;
  if (on != nullptr) {
    try {
      freeing = identify(*on);
    } catch (const device_error& e) {
      // Freed on a stream that is gone: no order to follow but the device's.
      if (e.code() != errc::invalid_argument) throw;
      dev.synchronize();
      freeing = stream_ref{};
      b->uses.clear();
      b->on = stream_ref{};
    }
  }
  live.take(p);
  b->allocated = false;
  const auto bytes = static_cast<std::int64_t>(b->size);
  change(b->kind, &caching_pool_stats::allocation, -1);
  change(b->kind, &caching_pool_stats::allocated_bytes, -bytes);
  change(b->kind, &caching_pool_stats::requested_bytes, -static_cast<std::int64_t>(b->requested));
  b->requested = 0;
  // Freed on another stream than its own: the work queued on its own stream
  // may still use it, so that stream counts as a use too.
  if (freeing != b->on) {
    if (!b->on.settled() && std::find(b->uses.begin(), b->uses.end(), b->on) == b->uses.end())
      b->uses.push_back(b->on);
    b->on = freeing;
  }
  record_trace(trace_action::free_requested, b->ptr, b->size, b->on.handle);
  std::erase(b->uses, b->on);
  if (b->uses.empty()) {
    cache(b);
  } else if (capturing()) {
    ++b->pending_events;
    deferred.push_back(b);
  } else {
    finish_free(b);
  }
}

// One event per other stream the block was used on; a stream that is gone
// is waited for with the whole device.
void caching_allocator::state::finish_free(block* b) {
  for (const stream_ref& use : b->uses) {
    bool owned = false;
    const std::optional<event> marker = mark(use, owned);
    if (!marker) {
      dev.synchronize();
      continue;
    }
    pending.push_back({*marker, owned, {b}});
    ++b->pending_events;
  }
  b->uses.clear();
  if (b->pending_events == 0) cache(b);
}

// An event to mark a stream with, reused from earlier frees when possible.
event caching_allocator::state::spare_event() {
  if (spare_events.empty()) return dev.create_event();
  const event e = spare_events.back();
  spare_events.pop_back();
  return e;
}

// Put a block that is free of all pending work back in the cache, merged
// with free neighbours cached with the same stream (the lower block stays,
// so a segment's first block never goes away).
void caching_allocator::state::cache(block* b) {
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
    change(b->kind, &caching_pool_stats::inactive_split_bytes, static_cast<std::int64_t>(b->size));
  }
  insert_free(b);
  record_trace(trace_action::free_completed, b->ptr, b->size, b->on.handle);
}

// Merge `upper`, the next block after `lower`, into `lower`.
void caching_allocator::state::absorb(block* lower, block* upper) {
  lower->size += upper->size;
  lower->next = upper->next;
  if (upper->next != nullptr) upper->next->prev = lower;
  retire_block(upper);
}

// Cache the blocks whose events have completed; with `wait`, wait for them
// all first (the host blocks: only empty_cache and out-of-memory do this).
void caching_allocator::state::collect_events(bool wait) {
  for (std::size_t i = 0; i < pending.size();) {
    if (wait) {
      dev.synchronize(pending[i].marker);
    } else if (!dev.query(pending[i].marker)) {
      ++i;
      continue;
    }
    caching::pending_event done = std::move(pending[i]);
    pending[i] = std::move(pending.back());
    pending.pop_back();
    if (done.owned) spare_events.push_back(done.marker);
    for (block* b : done.blocks)
      if (--b->pending_events == 0) cache(b);
  }
}

caching_allocator::caching_allocator(device& dev, caching_config config)
    : state_(std::make_unique<state>(dev, std::move(config))) {}

caching_allocator::~caching_allocator() {
  life_.end();
}

namespace {

// Blocks start at multiples of 512 bytes from a segment, and segments at
// the device's alignment: a stricter one cannot be promised.
void check_alignment(std::size_t alignment) {
  if (alignment > device_alignment || !std::has_single_bit(alignment))
    throw device_error(errc::invalid_argument,
                       "caching_allocator: alignment " + std::to_string(alignment) +
                           " is not a power of two up to " + std::to_string(device_alignment));
}

}  // namespace

// The hot path: one lock around the cache.
void* caching_allocator::allocate_on(std::size_t bytes, std::size_t alignment, stream s) {
  life_.check("allocate_on");
  if (alignment != device_alignment) check_alignment(alignment);
  if (bytes == 0) return nullptr;
  try {
    std::lock_guard lock(state_->mutex);
    return state_->allocate(bytes, s);
  } catch (const out_of_memory_error& e) {
    state_->notify_observers(e.report());
    throw;
  }
}

// Free in the order of `s`, caching the block with `s`.
void caching_allocator::deallocate_on(void* p, std::size_t, std::size_t, stream s) {
  life_.check("deallocate_on");
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  state_->deallocate(p, &s);
}

// Free in the order of the stream the block was allocated on.
void caching_allocator::deallocate(void* p) {
  life_.check("deallocate");
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  state_->deallocate(p, nullptr);
}

// A block from the default stream's cache, once the work queued there is done,
// so any stream may use it.
void* caching_allocator::allocate_now(std::size_t bytes, std::size_t alignment) {
  life_.check("allocate_now");
  void* p = allocate_on(bytes, alignment, stream{});
  state_->dev.synchronize(stream{});
  return p;
}

// Wait for the device, so the block may be reused on any stream at once.
void caching_allocator::deallocate_now(void* p, std::size_t bytes, std::size_t alignment) {
  life_.check("deallocate_now");
  state_->dev.synchronize();
  deallocate_on(p, bytes, alignment, stream{});
}

// Remember one more stream whose work must finish before the block's reuse.
void caching_allocator::record_stream(void* p, stream s) {
  life_.check("record_stream");
  std::lock_guard lock(state_->mutex);
  block* b = state_->find_live(p, "record_stream");
  const caching::stream_ref use = state_->identify(s);
  if (use != b->on && std::find(b->uses.begin(), b->uses.end(), use) == b->uses.end())
    b->uses.push_back(use);
}

void caching_allocator::stream_destroyed(stream s) {
  life_.check("stream_destroyed");
  std::lock_guard lock(state_->mutex);
  state_->retire(s);
}

void caching_allocator::empty_cache() {
  life_.check("empty_cache");
  std::lock_guard lock(state_->mutex);
  state_->release_cached();
}

caching_stats caching_allocator::stats() const {
  life_.check("stats");
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

void caching_allocator::reset_peak_stats() {
  life_.check("reset_peak_stats");
  std::lock_guard lock(state_->mutex);
  for (caching_pool_stats* pool : {&state_->stats.all, &state_->stats.small, &state_->stats.large})
    for_each_stat(*pool, [](caching_stat& stat) { stat.peak = stat.current; });
}

void caching_allocator::reset_accumulated_stats() {
  life_.check("reset_accumulated_stats");
  std::lock_guard lock(state_->mutex);
  caching_stats& stats = state_->stats;
  for (caching_pool_stats* pool : {&stats.all, &stats.small, &stats.large})
    for_each_stat(*pool, [](caching_stat& stat) { stat.allocated = stat.freed = 0; });
  stats.cache_hits = stats.cache_misses = stats.cross_stream_reuses = 0;
  stats.num_alloc_retries = stats.num_ooms = 0;
  stats.num_device_allocs = stats.num_device_frees = 0;
}

std::vector<trace_entry> caching_allocator::trace() const {
  life_.check("trace");
  std::lock_guard lock(state_->mutex);
  return state_->ordered_trace();
}

memory_snapshot caching_allocator::snapshot() const {
  life_.check("snapshot");
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
