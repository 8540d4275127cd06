// strata GPU caching allocator: what it holds at one moment (segments and
// their blocks), its recent actions, and the JSON and HTML renderings of them.
//
// The JSON uses the key names of PyTorch's memory snapshot (segments with
// address, total_size, stream, segment_type and blocks with size,
// requested_size, address, state; device_traces with action, addr, size,
// stream), so the tools written for that format read it after a conversion
// from JSON to pickle.
#ifndef STRATA_GPU_CACHING_SNAPSHOT_HPP
#define STRATA_GPU_CACHING_SNAPSHOT_HPP

#include <strata/gpu/caching/statistics.hpp>
#include <strata/gpu/device.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::gpu {

enum class trace_action {
  alloc,           // a block handed out
  free_requested,  // a block freed while events on other streams are pending
  free_completed,  // a block back in the cache
  segment_alloc,   // a segment taken from the device
  segment_free,    // a segment given back to the device
  segment_map,     // an expandable segment grew: memory mapped at its end
  segment_unmap,   // an expandable segment shrank: memory unmapped from its end
  oom,             // an allocation that failed
};

struct trace_entry {
  trace_action action;
  std::uintptr_t address;
  std::size_t size;
  stream on;
  std::uint64_t sequence;  // counts every traced action, so gaps show dropped entries
  std::size_t requested;   // alloc and oom: the bytes asked for (size is the block's); else 0
};

enum class block_state { active_allocated, active_pending_free, inactive };

struct block_info {
  std::uintptr_t address;
  std::size_t offset;  // from the start of the segment
  std::size_t size;
  std::size_t requested;  // 0 unless handed out
  block_state state;
  stream on;  // the stream it is cached with, or was allocated on
};

struct segment_info {
  std::uintptr_t address;
  std::size_t size;
  stream on;  // the stream it was taken for
  bool small;
  bool graph_pool;  // set aside for a CUDA graph's capture
  std::size_t allocated;
  std::size_t active;
  std::size_t requested;
  std::vector<block_info> blocks;  // in address order, covering the segment
};

struct memory_snapshot {
  int device = 0;                      // the device's ordinal
  std::vector<segment_info> segments;  // in address order
  std::vector<trace_entry> trace;      // oldest first
  caching_stats stats;
  std::size_t device_total = 0;
  std::size_t device_free = 0;
};

const char* to_string(trace_action action) noexcept;
const char* to_string(block_state state) noexcept;

// The snapshot as one JSON object.
std::string to_json(const memory_snapshot& snapshot);

// A self-contained HTML page (inline CSS and script, nothing fetched) that
// draws every segment as a bar of its blocks, lists the statistics and the
// trace, and shows a block's details on hover.
std::string to_html(const memory_snapshot& snapshot);

}  // namespace strata::gpu

#endif
