// strata GPU caching allocator, private: the out-of-memory report's what-if,
// the trace ring replayed (caching/replay.hpp) under configurations that
// might have served the failed request.
#include <strata/gpu/caching/replay.hpp>

#include "allocator_state.hpp"
#include "trace_file.hpp"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace strata::gpu {

using caching::block;

namespace {

// The changes tried, each over the current configuration. A key this build
// does not know is skipped.
constexpr const char* candidates[] = {
    "expandable_segments:True", "max_split_size_mb:64",  "max_split_size_mb:128",
    "max_split_size_mb:256",    "max_split_size_mb:512", "roundup_power2_divisions:4",
};

// An alloc record of `size` bytes at `address` on `on`, placed before the ring's actions.
trace::device_record earlier_block(std::uint64_t address, std::size_t size, stream on, int device) {
  trace::device_record r{};
  r.address = address;
  r.size = size;
  r.stream = reinterpret_cast<std::uintptr_t>(on.handle);
  r.device = static_cast<std::uint32_t>(device);
  r.kind = trace::device_op::alloc;
  return r;
}

}  // namespace

// Blocks freed in the ring but allocated before it, and blocks live now
// whose allocation the ring lost, are allocated first, so the replay starts
// from what was held when the ring's oldest entry was recorded (in another
// order than they were taken, which the replay cannot know).
std::vector<trace::device_record> caching_allocator::state::ring_as_trace() const {
  const std::vector<trace_entry> entries = ordered_trace();
  const int device = dev.ordinal();
  std::vector<trace::device_record> before;
  std::vector<trace::device_record> window;
  std::unordered_set<std::uintptr_t> open;
  for (const trace_entry& e : entries) {
    if (e.action == trace_action::alloc) {
      open.insert(e.address);
    } else if (e.action == trace_action::free_requested) {
      if (open.erase(e.address) == 0)
        before.push_back(earlier_block(e.address, e.size, e.on, device));
    } else if (e.action != trace_action::oom) {
      continue;
    }
    window.push_back(caching::to_record(e, device));
  }
  for (const auto& [address, segment] : segments)
    for (const block* b = segment.head; b != nullptr; b = b->next)
      if (b->allocated && !open.contains(caching::address_of(b->ptr)))
        before.push_back(
            earlier_block(caching::address_of(b->ptr), b->requested, b->on.handle, device));
  before.insert(before.end(), window.begin(), window.end());
  return before;
}

// The replay must fail under the current configuration too, or it says
// nothing about the others.
std::string caching_allocator::state::avoiding_config(std::size_t& replayed) {
  const std::vector<trace::device_record> records = ring_as_trace();
  replayed = records.size();
  if (records.empty() || records.back().kind != trace::device_op::oom) return {};
  replay_options options;
  options.device_memory =
      dev.memory().free + static_cast<std::size_t>(stats.all.reserved_bytes.current);
  if (!replay(records, config, options).out_of_memory) return {};
  std::string best;
  std::size_t best_peak = 0;
  for (const char* change : candidates) {
    caching_config other;
    try {
      other = parse_caching_config(change, config);
    } catch (const std::invalid_argument&) {
      continue;
    }
    const replay_result result = replay(records, other, options);
    if (result.out_of_memory || (!best.empty() && result.peak_reserved >= best_peak)) continue;
    best = change;
    best_peak = result.peak_reserved;
  }
  return best;
}

}  // namespace strata::gpu
