#include <strata/gpu/caching/out_of_memory.hpp>

#include <cstdio>

namespace strata::gpu {

namespace {

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
         " and fragmentation is " + share +
         " (free cached bytes outside the largest free block). If reserved but unallocated "
         "memory is large, set max_split_size_mb in STRATA_GPU_ALLOC_CONF to avoid "
         "fragmentation.";
}

}  // namespace

out_of_memory_error::out_of_memory_error(const out_of_memory_report& report,
                                         std::string snapshot_json)
    : device_error(errc::out_of_memory, message(report)),
      report_(report),
      snapshot_json_(std::move(snapshot_json)) {}

}  // namespace strata::gpu
