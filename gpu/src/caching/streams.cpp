// strata GPU caching allocator, private: streams as the allocator knows them,
// and the events that order reuse after another stream's work.
#include "allocator_state.hpp"

#include <algorithm>
#include <thread>

namespace strata::gpu {

using caching::block;
using caching::stream_ref;

// The device says what the handle names now; a per-thread handle also
// remembers its thread, the only one that can name that stream later.
stream_ref caching_allocator::state::identify(stream s) {
  stream_ref ref{dev.identify(s), s, {}};
  if (s.is_per_thread()) ref.thread = std::this_thread::get_id();
  return ref;
}

// An unknown handle, or one that names another stream now, is a stream gone.
bool caching_allocator::state::record_on(event e, const stream_ref& s) {
  if (s.thread != std::thread::id{} && s.thread != std::this_thread::get_id()) {
    dev.record(e, stream::legacy());
    return true;
  }
  try {
    if (dev.identify(s.handle) != s.id) return false;
  } catch (const device_error& error) {
    if (error.code() != errc::invalid_argument) throw;
    return false;
  }
  dev.record(e, s.handle);
  return true;
}

// A destroyed stream's retirement event stands for all of its work.
std::optional<event> caching_allocator::state::mark(const stream_ref& s, bool& owned) {
  if (const auto it = retired.find(s.id); it != retired.end()) {
    owned = false;
    return it->second;
  }
  const event e = spare_event();
  if (!record_on(e, s)) {
    spare_events.push_back(e);
    return std::nullopt;
  }
  owned = true;
  return e;
}

// One event per stream, waited on in turn; a stream gone means the whole device.
void caching_allocator::state::wait_for(const std::vector<stream_ref>& streams) {
  for (const stream_ref& s : streams) {
    if (s.settled()) continue;
    bool owned = false;
    const std::optional<event> e = mark(s, owned);
    if (!e) {
      dev.synchronize();
      return;
    }
    dev.synchronize(*e);
    if (owned) spare_events.push_back(*e);
  }
}

// Re-keyed as settled, so any stream takes them without an event.
void caching_allocator::state::settle(stream_id id) {
  std::vector<block*> moved;
  for (free_blocks* set : {&small_free, &large_free})
    for (auto it = set->begin(); it != set->end();) {
      block* b = *it;
      if (b->on.id != id) {
        ++it;
        continue;
      }
      ++it;
      uncache(set->find(b));
      moved.push_back(b);
    }
  for (block* b : moved) {
    b->on = stream_ref{};
    if (b->split()) {
      change(b->kind, &caching_pool_stats::inactive_split, 1);
      change(b->kind, &caching_pool_stats::inactive_split_bytes,
             static_cast<std::int64_t>(b->size));
    }
    insert_free(b);
  }
}

// The stream still exists: one event now covers what is cached with it (those
// blocks wait for it, then are settled) and what it still holds (their frees
// use it), since nothing more can be queued on it.
void caching_allocator::state::retire(stream s) {
  const stream_ref ref = identify(s);
  if (retired.contains(ref.id)) return;
  const event e = dev.create_event();
  dev.record(e, s);
  retired.emplace(ref.id, e);
  caching::pending_event waiting{e, false, {}};
  for (free_blocks* set : {&small_free, &large_free})
    for (auto it = set->begin(); it != set->end();) {
      block* b = *it++;
      if (b->on.id != ref.id) continue;
      uncache(set->find(b));
      change(b->kind, &caching_pool_stats::active, 1);
      change(b->kind, &caching_pool_stats::active_bytes, static_cast<std::int64_t>(b->size));
      b->on = stream_ref{};
      ++b->pending_events;
      waiting.blocks.push_back(b);
    }
  if (!waiting.blocks.empty()) pending.push_back(std::move(waiting));
}

}  // namespace strata::gpu
