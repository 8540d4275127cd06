// strata GPU caching allocator, private: graph pools, PyTorch's private pools
// for CUDA graph capture. A capture must not ask the device for memory nor
// query events, so a pool's memory is set aside when it begins, before the
// capture; during the capture it also adopts segments of the allocator's
// pool that were idle when it began (the device was idle then too).
#include "allocator_state.hpp"

#include <algorithm>
#include <string>

namespace strata::gpu {

using caching::block;
using caching::free_blocks;
using caching::graph_pool;
using caching::pool_kind;
using caching::pool_number;
using caching::segment_record;
using caching::stream_ref;

// A cached block moves to another pool or stream: out of its free set and back in.
void caching_allocator::state::rekey(block* b, pool_number pool, const stream_ref& s) {
  uncache(this->pool(b->kind).find(b));
  b->pool = pool;
  b->on = s;
  if (b->split()) {
    change(b->kind, &caching_pool_stats::inactive_split, 1);
    change(b->kind, &caching_pool_stats::inactive_split_bytes, static_cast<std::int64_t>(b->size));
  }
  insert_free(b);
}

bool caching_allocator::state::capturing() const {
  return std::any_of(graph_pools.begin(), graph_pools.end(),
                     [](const graph_pool& p) { return p.allocating; });
}

pool_number caching_allocator::state::pool_for(stream s) const {
  for (const graph_pool& p : graph_pools)
    if (p.allocating && p.filter(s)) return p.number;
  return 0;
}

caching::graph_pool* caching_allocator::state::find_pool(graph_pool_id id) {
  const auto it = std::find_if(graph_pools.begin(), graph_pools.end(),
                               [&](const graph_pool& p) { return p.id == id; });
  return it == graph_pools.end() ? nullptr : &*it;
}

// The pool's blocks of this stream, then its set-aside (settled) blocks, then
// an idle segment adopted whole; never the device.
block* caching_allocator::state::take_for_graph(pool_number number, pool_kind kind,
                                                const stream_ref& s, std::size_t size,
                                                std::size_t requested) {
  block* b = take_cached(number, kind, s.id, size);
  if (b == nullptr && (b = take_cached(number, kind, 0, size)) != nullptr) b->on = s;
  if (b == nullptr) {
    const graph_pool& owner =
        *std::find_if(graph_pools.begin(), graph_pools.end(),
                      [&](const graph_pool& p) { return p.number == number; });
    for (auto& [address, segment] : segments) {
      if (segment.pool != 0 || segment.expandable() || segment.kind != kind ||
          segment.size < size || !all_cached(segment))
        continue;
      bool idle_at_begin = true;
      for (const block* part = segment.head; part != nullptr; part = part->next)
        idle_at_begin = idle_at_begin && part->freed_at <= owner.begun_at;
      if (!idle_at_begin) continue;
      segment.pool = number;
      segment.on = s;
      for (block* part = segment.head; part != nullptr; part = part->next) rekey(part, number, s);
      b = take_cached(number, kind, s.id, size);
      if (b != nullptr) break;
    }
  }
  if (b == nullptr) {
    ++stats.num_ooms;
    record_trace(trace_action::oom, nullptr, size, s.handle, requested);
    throw device_error(
        errc::out_of_memory,
        "caching_allocator: out of memory in a graph pool during capture: " +
            std::to_string(requested) +
            " bytes requested, and a capture may not ask the device for more; set aside more "
            "before the capture (caching_config::graph_pool_reserve, graph_pool_reserve_mb)");
  }
  ++stats.cache_hits;
  return b;
}

void caching_allocator::state::finish_deferred() {
  std::vector<block*> ready;
  ready.swap(deferred);
  for (block* b : ready) {
    --b->pending_events;
    finish_free(b);
  }
}

// Before the capture: the device is idle once this returns, so the pool may
// later adopt segments idle now; then the reserve, as settled blocks of the
// pool. Called after the capture began (older callers), it sets nothing aside.
void caching_allocator::begin_allocate_to_pool(graph_pool_id id,
                                               std::function<bool(stream)> filter) {
  life_.check("begin_allocate_to_pool");
  std::lock_guard lock(state_->mutex);
  state& st = *state_;
  graph_pool* pool = st.find_pool(id);
  if (pool == nullptr) {
    st.graph_pools.push_back({id, st.next_pool++, {}, false, 0});
    pool = &st.graph_pools.back();
  }
  pool->filter = std::move(filter);
  try {
    st.dev.synchronize();
    st.finish_deferred();
    st.collect_events(false);
    pool->begun_at = st.clock;
    std::size_t reserved = 0;
    for (const auto& [address, segment] : st.segments)
      if (segment.pool == pool->number) reserved += segment.size;
    while (reserved < st.config.graph_pool_reserve) {
      const bool small = reserved == 0 && st.config.graph_pool_reserve > st.config.small_segment;
      const pool_kind kind = small ? pool_kind::small : pool_kind::large;
      const std::size_t want =
          small ? st.config.small_segment
                : std::max(st.config.graph_pool_reserve - reserved, st.config.min_large_alloc);
      block* b = st.new_segment(kind, stream_ref{}, want, 0, pool->number);
      b->freed_at = st.clock;
      st.insert_free(b);
      reserved += st.segments.at(caching::address_of(b->ptr)).size;
    }
  } catch (const device_error& e) {
    if (e.code() != errc::capture) throw;
  }
  pool->allocating = true;
}

void caching_allocator::end_allocate_to_pool(graph_pool_id id) {
  life_.check("end_allocate_to_pool");
  std::lock_guard lock(state_->mutex);
  if (graph_pool* pool = state_->find_pool(id)) pool->allocating = false;
}

// The graphs are done: after the device is idle every cached block of the
// pool is settled, and the pool's segments are the allocator's again.
void caching_allocator::release_pool(graph_pool_id id) {
  life_.check("release_pool");
  std::lock_guard lock(state_->mutex);
  state& st = *state_;
  graph_pool* pool = st.find_pool(id);
  if (pool == nullptr) return;
  pool->allocating = false;
  const pool_number number = pool->number;
  st.dev.synchronize();
  if (!st.capturing()) st.finish_deferred();
  st.collect_events(false);
  for (auto& [address, segment] : st.segments) {
    if (segment.pool != number) continue;
    segment.pool = 0;
    for (block* b = segment.head; b != nullptr; b = b->next) {
      if (b->cached())
        st.rekey(b, 0, stream_ref{});
      else
        b->pool = 0;
    }
  }
  std::erase_if(st.graph_pools, [&](const graph_pool& p) { return p.number == number; });
}

}  // namespace strata::gpu
