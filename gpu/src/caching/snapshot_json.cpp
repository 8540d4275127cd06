#include <strata/gpu/caching/snapshot.hpp>

#include <cstdint>
#include <string>

namespace strata::gpu {

namespace {

// A JSON writer just big enough for the snapshot: numbers, plain strings and
// comma placement.
class json_writer {
 public:
  // Open an object or array, as a member when `key` is given.
  void open(const char* key, char bracket) {
    separate();
    if (key != nullptr) write_key(key);
    out_ += bracket;
    first_ = true;
  }

  void close(char bracket) {
    out_ += bracket;
    first_ = false;
  }

  // A member whose value is a number.
  void number(const char* key, std::uint64_t value) {
    separate();
    write_key(key);
    out_ += std::to_string(value);
  }

  // A member whose value is a string of characters that need no escaping.
  void text(const char* key, const char* value) {
    separate();
    write_key(key);
    out_ += '"';
    out_ += value;
    out_ += '"';
  }

  std::string take() { return std::move(out_); }

 private:
  // The comma before every element but the first.
  void separate() {
    if (!first_) out_ += ',';
    first_ = false;
  }

  void write_key(const char* key) {
    out_ += '"';
    out_ += key;
    out_ += "\":";
  }

  std::string out_;
  bool first_ = true;
};

// Streams print as their handles' addresses, the default stream as 0.
std::uint64_t handle_number(stream s) {
  return reinterpret_cast<std::uintptr_t>(s.handle);
}

// One statistic as an object of its four numbers.
void write_stat(json_writer& json, const char* key, const caching_stat& stat) {
  json.open(key, '{');
  json.number("current", static_cast<std::uint64_t>(stat.current));
  json.number("peak", static_cast<std::uint64_t>(stat.peak));
  json.number("allocated", static_cast<std::uint64_t>(stat.allocated));
  json.number("freed", static_cast<std::uint64_t>(stat.freed));
  json.close('}');
}

// A pool's statistics.
void write_pool(json_writer& json, const char* key, const caching_pool_stats& pool) {
  json.open(key, '{');
  write_stat(json, "segment", pool.segment);
  write_stat(json, "allocation", pool.allocation);
  write_stat(json, "active", pool.active);
  write_stat(json, "inactive_split", pool.inactive_split);
  write_stat(json, "reserved_bytes", pool.reserved_bytes);
  write_stat(json, "allocated_bytes", pool.allocated_bytes);
  write_stat(json, "active_bytes", pool.active_bytes);
  write_stat(json, "inactive_split_bytes", pool.inactive_split_bytes);
  write_stat(json, "requested_bytes", pool.requested_bytes);
  json.close('}');
}

void write_stats(json_writer& json, const caching_stats& stats) {
  json.open("stats", '{');
  write_pool(json, "all", stats.all);
  write_pool(json, "small_pool", stats.small);
  write_pool(json, "large_pool", stats.large);
  json.number("cache_hits", stats.cache_hits);
  json.number("cache_misses", stats.cache_misses);
  json.number("cross_stream_reuses", stats.cross_stream_reuses);
  json.number("num_alloc_retries", stats.num_alloc_retries);
  json.number("num_ooms", stats.num_ooms);
  json.number("num_device_allocs", stats.num_device_allocs);
  json.number("num_device_frees", stats.num_device_frees);
  json.close('}');
}

// A segment in PyTorch's keys, its blocks in address order.
void write_segment(json_writer& json, int device, const segment_info& segment) {
  json.open(nullptr, '{');
  json.number("device", device);
  json.number("address", segment.address);
  json.number("total_size", segment.size);
  json.number("stream", handle_number(segment.on));
  json.text("segment_type", segment.small ? "small" : "large");
  json.number("graph_pool", segment.graph_pool ? 1 : 0);
  json.number("allocated_size", segment.allocated);
  json.number("active_size", segment.active);
  json.number("requested_size", segment.requested);
  json.open("blocks", '[');
  for (const block_info& b : segment.blocks) {
    json.open(nullptr, '{');
    json.number("address", b.address);
    json.number("offset", b.offset);
    json.number("size", b.size);
    json.number("requested_size", b.requested);
    json.text("state", to_string(b.state));
    json.number("stream", handle_number(b.on));
    json.close('}');
  }
  json.close(']');
  json.close('}');
}

}  // namespace

const char* to_string(trace_action action) noexcept {
  switch (action) {
    case trace_action::alloc:
      return "alloc";
    case trace_action::free_requested:
      return "free_requested";
    case trace_action::free_completed:
      return "free_completed";
    case trace_action::segment_alloc:
      return "segment_alloc";
    case trace_action::segment_free:
      return "segment_free";
    case trace_action::segment_map:
      return "segment_map";
    case trace_action::segment_unmap:
      return "segment_unmap";
    case trace_action::oom:
      return "oom";
  }
  return "unknown";
}

const char* to_string(block_state state) noexcept {
  switch (state) {
    case block_state::active_allocated:
      return "active_allocated";
    case block_state::active_pending_free:
      return "active_pending_free";
    case block_state::inactive:
      return "inactive";
  }
  return "unknown";
}

// Segments, the trace as PyTorch's device_traces (one device), statistics and
// the device's memory.
std::string to_json(const memory_snapshot& snapshot) {
  json_writer json;
  json.open(nullptr, '{');
  json.open("segments", '[');
  for (const segment_info& segment : snapshot.segments)
    write_segment(json, snapshot.device, segment);
  json.close(']');
  json.open("device_traces", '[');
  json.open(nullptr, '[');
  for (const trace_entry& entry : snapshot.trace) {
    json.open(nullptr, '{');
    json.text("action", to_string(entry.action));
    json.number("addr", entry.address);
    json.number("size", entry.size);
    json.number("stream", handle_number(entry.on));
    json.number("sequence", entry.sequence);
    json.close('}');
  }
  json.close(']');
  json.close(']');
  write_stats(json, snapshot.stats);
  json.number("device_total", snapshot.device_total);
  json.number("device_free", snapshot.device_free);
  json.close('}');
  return json.take();
}

}  // namespace strata::gpu
