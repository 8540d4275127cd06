// strata GPU caching allocator, private: what an allocation would get, asked
// without allocating (largest_allocatable, would_fit), and the OOM observers.
#include "allocator_state.hpp"

#include <algorithm>
#include <limits>

namespace strata::gpu {

using caching::block;
using caching::pool_kind;
using caching::pool_number;
using caching::round_size;

// The device's free memory plus the segments a retry would give back: those
// with no block handed out (pending frees are waited for first).
std::size_t caching_allocator::state::segment_room() {
  std::size_t room = dev.memory().free;
  for (const auto& [address, segment] : segments) {
    if (segment.pool != 0) continue;
    bool idle = true;
    for (const block* b = segment.head; b != nullptr && idle; b = b->next) idle = !b->allocated;
    if (idle) room += segment.size;
  }
  return room;
}

// The largest X whose rounded size is at most `bytes`.
std::size_t caching_allocator::state::largest_served_by(std::size_t bytes) const {
  if (bytes < caching::min_block) return 0;
  const std::size_t limit = bytes / caching::min_block * caching::min_block;
  if (round_size(limit, config.roundup_power2_divisions) <= bytes) return limit;
  const std::size_t step = std::bit_floor(limit) / config.roundup_power2_divisions;
  return limit / step * step;
}

// The largest request a cached block of a pool serves, trying each block with fits().
std::size_t caching_allocator::state::largest_for(stream s) {
  const pool_number graph = capturing() ? pool_for(s) : 0;
  std::size_t best = 0;
  for (const free_blocks* set : {&small_free, &large_free})
    for (const block* b : *set) {
      if (b->pool != graph) continue;
      std::size_t x = largest_served_by(b->size);
      if (b->kind == pool_kind::small) x = std::min(x, config.small_size);
      if (x > best && fits(b, round_size(x, config.roundup_power2_divisions))) best = x;
    }
  if (graph != 0) {
    for (const auto& [address, segment] : segments)
      if (segment.pool == 0 && all_cached(segment))
        best = std::max(best, segment.kind == pool_kind::small ? config.small_size
                                                               : largest_served_by(segment.size));
    return best;
  }
  if (dev.capture_state(s) != capture_status::none) return 0;
  // A new segment: its own rounded size, else a whole large or small segment.
  const std::size_t room = segment_room();
  const std::size_t own = largest_served_by(room / config.large_rounding * config.large_rounding);
  const std::size_t own_rounded = round_size(own, config.roundup_power2_divisions);
  if (own_rounded >= config.min_large_alloc && segment_size(pool_kind::large, own_rounded) <= room)
    return std::max(best, own);
  if (room >= config.large_segment)
    return std::max(best, largest_served_by(config.min_large_alloc - 1));
  if (room >= config.small_segment) return std::max(best, config.small_size);
  return best;
}

// The allocation path's choices, none taken: a cached block that fits, else room for a segment.
bool caching_allocator::state::fits_now(std::size_t bytes, stream s) {
  if (bytes == 0) return true;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) return false;
  const std::size_t size = round_size(bytes, config.roundup_power2_divisions);
  const pool_kind kind = size <= config.small_size ? pool_kind::small : pool_kind::large;
  const pool_number graph = capturing() ? pool_for(s) : 0;
  for (const block* b : pool(kind))
    if (b->pool == graph && b->size >= size && fits(b, size)) return true;
  if (graph != 0) {
    for (const auto& [address, segment] : segments)
      if (segment.pool == 0 && segment.kind == kind && segment.size >= size && all_cached(segment))
        return true;
    return false;
  }
  if (dev.capture_state(s) != capture_status::none) return false;
  return segment_size(kind, size) <= segment_room();
}

// A copy of the list, so an observer may add or remove observers.
void caching_allocator::state::notify_observers(const out_of_memory_report& report) {
  std::vector<oom_observer> calls;
  {
    std::lock_guard lock(observers_mutex);
    for (const auto& entry : observers) calls.push_back(entry.second);
  }
  for (const oom_observer& call : calls) call(report);
}

std::size_t caching_allocator::largest_allocatable(stream s) {
  std::lock_guard lock(state_->mutex);
  return state_->largest_for(s);
}

bool caching_allocator::would_fit(std::size_t bytes, stream s) {
  std::lock_guard lock(state_->mutex);
  return state_->fits_now(bytes, s);
}

std::uint64_t caching_allocator::add_oom_observer(oom_observer observer) {
  if (!observer)
    throw device_error(errc::invalid_argument,
                       "caching_allocator: add_oom_observer of an empty "
                       "function");
  std::lock_guard lock(state_->observers_mutex);
  const std::uint64_t id = state_->next_observer++;
  state_->observers.emplace_back(id, std::move(observer));
  return id;
}

bool caching_allocator::remove_oom_observer(std::uint64_t id) {
  std::lock_guard lock(state_->observers_mutex);
  return std::erase_if(state_->observers, [&](const auto& entry) { return entry.first == id; }) !=
         0;
}

}  // namespace strata::gpu
