#include <strata/gpu/caching/out_of_memory.hpp>

#include "allocator_state.hpp"

#include <algorithm>
#include <cstdio>

namespace strata::gpu {

namespace {

// How many free blocks and stranded segments the report lists.
constexpr std::size_t reported_blocks = 8;

// Bytes as a person reads them: "1.50 GiB (1610612736 bytes)".
std::string human(std::size_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%zu bytes", bytes);
  else
    std::snprintf(text, sizeof text, "%.2f %s (%zu bytes)", value, units[unit], bytes);
  return text;
}

// The largest free blocks, the stranded segments and the advice, as lines.
std::string details(const out_of_memory_report& r) {
  std::string text;
  if (!r.largest_free_blocks.empty()) {
    text += "\n  largest free blocks:";
    for (const free_block& b : r.largest_free_blocks)
      text.append(" ").append(human(b.size)).append(";");
  }
  for (const stranded_segment& s : r.stranded) {
    char address[32];
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(s.address));
    text.append("\n  segment ")
        .append(address)
        .append(" of ")
        .append(human(s.size))
        .append(" strands ")
        .append(human(s.stranded))
        .append(" (free, but blocks of it are in use)");
  }
  if (!r.avoided_by.empty())
    text.append("\n  a replay of the last ")
        .append(std::to_string(r.replayed_actions))
        .append(" actions serves this request with ")
        .append(r.avoided_by)
        .append(": add it to STRATA_GPU_ALLOC_CONF.");
  else
    text +=
        "\n  If reserved but unallocated memory is large, set max_split_size_mb in "
        "STRATA_GPU_ALLOC_CONF to avoid fragmentation.";
  return text;
}

// PyTorch's message, with the largest free block and the fragmentation that
// tell a leak from a fragmented cache.
std::string message(const out_of_memory_report& r) {
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", r.fragmentation * 100.0);
  return "caching_allocator out of memory: tried to allocate " + human(r.requested) +
         " (a block of " + human(r.rounded) + "); the device has " + human(r.device_total) +
         " in total, of which " + human(r.device_free) + " is free. Of the memory reserved by " +
         "this allocator (" + human(r.reserved) + "), " + human(r.allocated) +
         " is allocated and " + human(r.reserved - r.allocated) +
         " is reserved but unallocated; the largest free block is " + human(r.largest_free) +
         " and fragmentation is " + share + " (free cached bytes outside the largest free block)." +
         details(r);
}

}  // namespace

out_of_memory_error::out_of_memory_error(const out_of_memory_report& report,
                                         std::string snapshot_json)
    : device_error(errc::out_of_memory, message(report)),
      report_(report),
      snapshot_json_(std::move(snapshot_json)) {}

using caching::block;
using caching::free_blocks;

// The free cached blocks' total and the largest of them.
std::pair<std::size_t, std::size_t> caching_allocator::state::free_extent() const {
  std::size_t total = 0;
  std::size_t largest = 0;
  for (const free_blocks* set : {&small_free, &large_free})
    for (const block* b : *set) {
      total += b->size;
      largest = std::max(largest, b->size);
    }
  return {total, largest};
}

// Segments with free bytes and a block in use, most stranded first.
std::vector<stranded_segment> caching_allocator::state::stranded_segments() const {
  std::vector<stranded_segment> out;
  for (const auto& [address, segment] : segments) {
    std::size_t free = 0;
    bool used = false;
    for (const block* b = segment.head; b != nullptr; b = b->next) {
      if (b->cached()) free += b->size;
      used = used || b->allocated;
    }
    if (used && free != 0) out.push_back({address, segment.size, free});
  }
  std::sort(out.begin(), out.end(), [](const stranded_segment& a, const stranded_segment& b) {
    return a.stranded > b.stranded;
  });
  if (out.size() > reported_blocks) out.resize(reported_blocks);
  return out;
}

// Out of memory for good: count it, trace it and throw the report.
[[noreturn]] void caching_allocator::state::fail(std::size_t requested, std::size_t size,
                                                 stream s) {
  ++stats.num_ooms;
  record_trace(trace_action::oom, nullptr, size, s, requested);
  out_of_memory_report report;
  report.requested = requested;
  report.rounded = size;
  report.allocated = static_cast<std::size_t>(stats.all.allocated_bytes.current);
  report.reserved = static_cast<std::size_t>(stats.all.reserved_bytes.current);
  const auto [free_total, largest] = free_extent();
  report.largest_free = largest;
  report.fragmentation =
      free_total == 0 ? 0.0 : 1.0 - static_cast<double>(largest) / static_cast<double>(free_total);
  for (const free_blocks* set : {&small_free, &large_free})
    for (const block* b : *set)
      report.largest_free_blocks.push_back({caching::address_of(b->ptr), b->size, b->on.handle});
  const auto larger = [](const free_block& a, const free_block& b) { return a.size > b.size; };
  std::sort(report.largest_free_blocks.begin(), report.largest_free_blocks.end(), larger);
  if (report.largest_free_blocks.size() > reported_blocks)
    report.largest_free_blocks.resize(reported_blocks);
  report.stranded = stranded_segments();
  if (config.trace_capacity != 0) report.avoided_by = avoiding_config(report.replayed_actions);
  memory_snapshot shot = take_snapshot();
  report.device_free = shot.device_free;
  report.device_total = shot.device_total;
  throw out_of_memory_error(report, to_json(shot));
}

}  // namespace strata::gpu
