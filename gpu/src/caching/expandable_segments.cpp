// strata GPU caching allocator: expandable segments. Each stream and pool kind
// has one reservation of address space as large as the device; physical
// memory is mapped at its end a granule at a time as requests miss the cache,
// and unmapped from its end when the cache goes back. A block is always
// inside the mapped part, so no block spans unmapped memory.
#include "allocator_state.hpp"

#include <utility>

namespace strata::gpu {

using caching::address_of;
using caching::block;
using caching::pool_kind;
using caching::round_up;
using caching::segment_record;
using caching::stream_ref;

namespace {

// The last block of a segment.
block* last_of(const segment_record& segment) {
  block* b = segment.head;
  while (b != nullptr && b->next != nullptr) b = b->next;
  return b;
}

}  // namespace

// A free block goes back into its pool's free set, counted as cached.
void caching_allocator::state::recache(block* b) {
  if (b->split()) {
    change(b->kind, &caching_pool_stats::inactive_split, 1);
    change(b->kind, &caching_pool_stats::inactive_split_bytes, static_cast<std::int64_t>(b->size));
  }
  insert_free(b);
}

// As new_segment: one retry after giving the cache back, then the report.
block* caching_allocator::state::grow(pool_kind kind, const stream_ref& s, std::size_t size,
                                      std::size_t requested) {
  if (block* b = try_grow(kind, s, size)) return b;
  ++stats.num_alloc_retries;
  release_cached();
  if (block* b = try_grow(kind, s, size)) return b;
  fail(requested, size, s.handle);
}

// The free block at the end joins the new memory when it is this stream's,
// so only the difference is mapped.
block* caching_allocator::state::try_grow(pool_kind kind, const stream_ref& s, std::size_t size) {
  if (granule == 0) granule = dev.vm_granularity();
  auto it = segments.begin();
  while (it != segments.end() && !(it->second.expandable() && it->second.pool == 0 &&
                                   it->second.kind == kind && it->second.on == s))
    ++it;
  if (it == segments.end()) {
    const std::size_t span = round_up(dev.memory().total, granule);
    if (size > span) return nullptr;
    void* base = dev.reserve_address(span);
    it = segments.emplace(address_of(base), segment_record{0, s, kind, 0, nullptr, span}).first;
    change(kind, &caching_pool_stats::segment, 1);
  }
  segment_record& segment = it->second;
  block* last = last_of(segment);
  const bool joins = last != nullptr && last->cached() && last->on == s && last->size < size;
  const std::size_t bytes = round_up(joins ? size - last->size : size, granule);
  char* const end = reinterpret_cast<char*>(it->first) + segment.size;
  std::size_t mapped = 0;
  try {
    if (segment.size + bytes > segment.span)
      throw device_error(errc::out_of_memory, "expandable segment: its reservation is full");
    for (; mapped < bytes; mapped += granule) {
      // Released at once: the memory stays while mapped and goes with the unmap.
      const physical_memory memory = dev.create_physical(granule);
      try {
        dev.map(end + mapped, granule, memory);
      } catch (...) {
        dev.release_physical(memory);
        throw;
      }
      dev.release_physical(memory);
    }
    dev.set_access(end, bytes);
  } catch (const device_error& e) {
    for (; mapped != 0; mapped -= granule) dev.unmap(end + mapped - granule, granule);
    if (segment.size == 0) {
      dev.release_address(reinterpret_cast<void*>(it->first), segment.span);
      segments.erase(it);
      change(kind, &caching_pool_stats::segment, -1);
    }
    if (!e.is_out_of_memory()) throw;
    return nullptr;
  }
  // The last block is split from now on, which its free-set count must see.
  const bool last_cached = last != nullptr && last->cached();
  if (last_cached) uncache(pool(kind).find(last));
  block* fresh = make_block(end, bytes, s, kind, 0);
  fresh->prev = last;
  if (last != nullptr)
    last->next = fresh;
  else
    segment.head = fresh;
  if (last_cached && !joins) recache(last);
  segment.size += bytes;
  ++stats.num_device_allocs;
  change(kind, &caching_pool_stats::reserved_bytes, static_cast<std::int64_t>(bytes));
  record_trace(trace_action::segment_map, end, bytes, s.handle);
  if (!joins) return fresh;
  absorb(last, fresh);
  return last;
}

// Unmap [base + from, base + to) granule by granule, counting it.
void caching_allocator::state::unmap_range(std::uintptr_t base, segment_record& segment,
                                           std::size_t from, std::size_t to) {
  for (std::size_t at = from; at < to; at += granule)
    dev.unmap(reinterpret_cast<void*>(base + at), granule);
  segment.size -= to - from;
  ++stats.num_device_frees;
  change(segment.kind, &caching_pool_stats::reserved_bytes, -static_cast<std::int64_t>(to - from));
  record_trace(trace_action::segment_unmap, reinterpret_cast<void*>(base + from), to - from,
               segment.on.handle);
}

// The free blocks at the end merge into one (their streams have been waited
// for, so it is settled), and its whole granules go; a tail that starts
// inside a granule keeps that granule's part. A segment left with nothing
// mapped is released.
std::map<std::uintptr_t, segment_record>::iterator caching_allocator::state::shrink(
    std::map<std::uintptr_t, segment_record>::iterator it) {
  segment_record& segment = it->second;
  block* last = last_of(segment);
  if (!last->cached()) return std::next(it);
  while (last->prev != nullptr && last->prev->cached()) {
    block* before = last->prev;
    uncache(pool(before->kind).find(before));
    uncache(pool(last->kind).find(last));
    absorb(before, last);
    before->on = stream_ref{};
    recache(before);
    last = before;
  }
  if (last == segment.head) return release(it);
  const std::size_t offset = static_cast<std::size_t>(last->ptr - segment.head->ptr);
  const std::size_t keep = round_up(offset, granule);
  if (keep >= segment.size) return std::next(it);
  uncache(pool(last->kind).find(last));
  unmap_range(it->first, segment, keep, segment.size);
  if (keep == offset) {
    last->prev->next = nullptr;
    retire_block(last);
  } else {
    last->size = keep - offset;
    recache(last);
  }
  return std::next(it);
}

}  // namespace strata::gpu
