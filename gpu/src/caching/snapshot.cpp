#include "allocator_state.hpp"

#include <vector>

namespace strata::gpu {

using caching::address_of;
using caching::block;
using caching::free_blocks;
using caching::pool_kind;
using caching::segment_record;

// Every segment and block as they are now, with the trace and statistics.
memory_snapshot caching_allocator::state::take_snapshot() const {
  memory_snapshot shot;
  for (const auto& [address, segment] : segments) {
    segment_info info{address,
                      segment.size,
                      segment.on.handle,
                      segment.kind == pool_kind::small,
                      segment.pool != 0,
                      0,
                      0,
                      0,
                      {}};
    for (const block* b = segment.head; b != nullptr; b = b->next) {
      const block_state state = b->allocated             ? block_state::active_allocated
                                : b->pending_events != 0 ? block_state::active_pending_free
                                                         : block_state::inactive;
      if (b->allocated) info.allocated += b->size;
      if (state != block_state::inactive) info.active += b->size;
      info.requested += b->requested;
      info.blocks.push_back({address_of(b->ptr), address_of(b->ptr) - address, b->size,
                             b->requested, state, b->on.handle});
    }
    shot.segments.push_back(std::move(info));
  }
  shot.trace = ordered_trace();
  shot.stats = stats;
  shot.device = dev.ordinal();
  const memory_info memory = dev.memory();
  shot.device_total = memory.total;
  shot.device_free = memory.free;
  return shot;
}

// The ring, oldest first.
std::vector<trace_entry> caching_allocator::state::ordered_trace() const {
  std::vector<trace_entry> out(ring.begin() + static_cast<std::ptrdiff_t>(ring_next), ring.end());
  out.insert(out.end(), ring.begin(), ring.begin() + static_cast<std::ptrdiff_t>(ring_next));
  return out;
}

}  // namespace strata::gpu
