#include "allocator_state.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace strata::gpu {

using caching::address_of;
using caching::block;
using caching::free_blocks;
using caching::pool_kind;
using caching::pool_number;
using caching::round_up;
using caching::segment_record;
using caching::stream_ref;

// The bytes of the segment a request of `size` gets when nothing cached fits.
std::size_t caching_allocator::state::segment_size(pool_kind kind, std::size_t size) const {
  if (kind == pool_kind::small) return config.small_segment;
  if (size < config.min_large_alloc) return config.large_segment;
  return round_up(size, config.large_rounding);
}

// A new segment from the device, as one block for `s`; on running out, the
// cache goes back to the device and the device is asked once more.
block* caching_allocator::state::new_segment(pool_kind kind, const stream_ref& s, std::size_t size,
                                             std::size_t requested, pool_number pool) {
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
      fail(requested, size, s.handle);
    }
  }
  block* b = make_block(static_cast<char*>(p), bytes, s, kind, pool);
  segments.emplace(address_of(p), segment_record{bytes, s, kind, pool, b});
  ++stats.num_device_allocs;
  change(kind, &caching_pool_stats::segment, 1);
  change(kind, &caching_pool_stats::reserved_bytes, static_cast<std::int64_t>(bytes));
  record_trace(trace_action::segment_alloc, p, bytes, s.handle);
  return b;
}

// Whether every block of the segment is cached, so it can go back.
bool caching_allocator::state::all_cached(const segment_record& segment) {
  for (const block* b = segment.head; b != nullptr; b = b->next)
    if (!b->cached()) return false;
  return true;
}

// Each stream once: the ones whose queued work may still touch the segment.
std::vector<stream_ref> caching_allocator::state::streams_of(const segment_record& segment) {
  std::vector<stream_ref> streams;
  for (const block* b = segment.head; b != nullptr; b = b->next)
    if (!b->on.settled() && std::find(streams.begin(), streams.end(), b->on) == streams.end())
      streams.push_back(b->on);
  return streams;
}

// Give one fully free segment back to the device; the caller has waited for
// the streams that used it, since the device's free does not.
std::map<std::uintptr_t, segment_record>::iterator caching_allocator::state::release(
    std::map<std::uintptr_t, segment_record>::iterator it) {
  const segment_record segment = it->second;
  give_back(it->first, segment);
  for (block* b = segment.head; b != nullptr;) {
    block* next = b->next;
    uncache(pool(b->kind).find(b));
    retire_block(b);
    b = next;
  }
  ++stats.num_device_frees;
  change(segment.kind, &caching_pool_stats::segment, -1);
  change(segment.kind, &caching_pool_stats::reserved_bytes,
         -static_cast<std::int64_t>(segment.size));
  record_trace(trace_action::segment_free, reinterpret_cast<void*>(it->first), segment.size,
               segment.on.handle);
  return segments.erase(it);
}

// A device allocation goes back whole; an expandable segment is unmapped a
// granule at a time (whole mappings only), then its reservation goes.
void caching_allocator::state::give_back(std::uintptr_t address, const segment_record& segment) {
  if (!segment.expandable()) {
    dev.deallocate(reinterpret_cast<void*>(address));
    return;
  }
  for (std::size_t at = 0; at < segment.size; at += granule)
    dev.unmap(reinterpret_cast<void*>(address + at), granule);
  dev.release_address(reinterpret_cast<void*>(address), segment.span);
}

// empty_cache: wait for pending frees and for the streams that last used the
// free segments, then give those back. Destroyed streams' events go once no
// block handed out on them is left.
void caching_allocator::state::release_cached() {
  if (capturing())
    throw device_error(errc::capture,
                       "caching_allocator: empty_cache while a graph pool is allocating");
  finish_deferred();
  collect_events(true);
  std::vector<stream_ref> streams;
  const auto waits_for = [&](const stream_ref& s) {
    if (!s.settled() && std::find(streams.begin(), streams.end(), s) == streams.end())
      streams.push_back(s);
  };
  for (const auto& [address, segment] : segments) {
    if (segment.pool != 0) continue;
    if (segment.expandable()) {
      // The free blocks at its end, which shrink merges and unmaps.
      const block* last = segment.head;
      while (last->next != nullptr) last = last->next;
      for (; last != nullptr && last->cached(); last = last->prev) waits_for(last->on);
      continue;
    }
    if (!all_cached(segment)) continue;
    for (const stream_ref& s : streams_of(segment)) waits_for(s);
  }
  wait_for(streams);
  for (auto it = segments.begin(); it != segments.end();) {
    if (it->second.pool != 0)
      ++it;
    else if (it->second.expandable())
      it = shrink(it);
    else
      it = all_cached(it->second) ? release(it) : std::next(it);
  }
  std::erase_if(retired, [&](const auto& entry) {
    for (const auto& [address, segment] : segments)
      for (const block* b = segment.head; b != nullptr; b = b->next)
        if (b->allocated && b->on.id == entry.first) return false;
    dev.destroy_event(entry.second);
    return true;
  });
}

// Before a new segment of `bytes` lifts the reserved bytes above the
// threshold, give back whole free segments, longest free first.
void caching_allocator::state::collect_garbage(std::size_t bytes) {
  const auto limit = static_cast<double>(dev.memory().total) * config.garbage_collection_threshold;
  const auto over = [&] {
    return static_cast<double>(stats.all.reserved_bytes.current) + static_cast<double>(bytes) >
           limit;
  };
  if (!over()) return;
  std::vector<std::pair<std::uint64_t, std::uintptr_t>> idle;
  for (const auto& [address, segment] : segments)
    if (segment.pool == 0 && !segment.head->split() && segment.head->cached())
      idle.emplace_back(segment.head->freed_at, address);
  std::sort(idle.begin(), idle.end());
  for (const auto& candidate : idle) {
    if (!over()) break;
    const auto it = segments.find(candidate.second);
    wait_for(streams_of(it->second));
    release(it);
  }
}

// Give everything back: the device first finishes all work.
caching_allocator::state::~state() {
  try {
    dev.synchronize();
    for (const caching::pending_event& p : pending)
      if (p.owned) dev.destroy_event(p.marker);
    for (const event e : spare_events) dev.destroy_event(e);
    for (const auto& [id, e] : retired) dev.destroy_event(e);
    if (hop.handle != nullptr) dev.destroy_event(hop);
    for (const auto& [address, segment] : segments) give_back(address, segment);
  } catch (const device_error&) {
    // A device that fails while shutting down leaves nothing to give back to.
  }
  for (const auto& [address, segment] : segments) {
    for (block* b = segment.head; b != nullptr;) {
      block* next = b->next;
      delete b;
      b = next;
    }
  }
  for (block* b : spare_blocks) delete b;
}

}  // namespace strata::gpu
