#include "allocator_state.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace strata::gpu {

using caching::address_of;
using caching::block;
using caching::free_blocks;
using caching::pool_kind;
using caching::round_up;
using caching::segment_record;

// The bytes of the segment a request of `size` gets when nothing cached fits.
std::size_t caching_allocator::state::segment_size(pool_kind kind, std::size_t size) const {
  if (kind == pool_kind::small) return config.small_segment;
  if (size < config.min_large_alloc) return config.large_segment;
  return round_up(size, config.large_rounding);
}

// A new segment from the device, as one block for `s`; on running out, the
// cache goes back to the device and the device is asked once more.
block* caching_allocator::state::new_segment(pool_kind kind, stream s, std::size_t size,
                                             std::size_t requested) {
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

// Whether every block of the segment is cached, so it can go back.
bool caching_allocator::state::all_cached(const segment_record& segment) {
  for (const block* b = segment.head; b != nullptr; b = b->next)
    if (!b->cached()) return false;
  return true;
}

// Give one fully free segment back to the device.
std::map<std::uintptr_t, segment_record>::iterator caching_allocator::state::release(
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
void caching_allocator::state::release_cached() {
  collect_events(true);
  for (auto it = segments.begin(); it != segments.end();)
    it = all_cached(it->second) ? release(it) : std::next(it);
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
    if (!segment.head->split() && segment.head->cached())
      idle.emplace_back(segment.head->freed_at, address);
  std::sort(idle.begin(), idle.end());
  for (const auto& candidate : idle) {
    if (!over()) break;
    release(segments.find(candidate.second));
  }
}

// Give everything back: the device first finishes all work.
caching_allocator::state::~state() {
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

}  // namespace strata::gpu
