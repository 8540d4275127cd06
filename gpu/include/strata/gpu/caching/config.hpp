// strata GPU caching allocator: its configuration, in code or from
// STRATA_GPU_ALLOC_CONF (the counterpart of PYTORCH_CUDA_ALLOC_CONF).
#ifndef STRATA_GPU_CACHING_CONFIG_HPP
#define STRATA_GPU_CACHING_CONFIG_HPP

#include <cstddef>
#include <string>
#include <string_view>

namespace strata::gpu {

struct caching_config {
  // Blocks at least this large are never split, and serve only requests of
  // similar size (at most `large_segment` bytes smaller), so a large block is
  // never carved into small pieces that fragment it. The default never limits.
  std::size_t max_split_size = static_cast<std::size_t>(-1);
  // 0 or 1: requests round to 512 bytes. A power of two N > 1: a request also
  // rounds up to the next of N equal steps between the powers of two around it
  // (1200 bytes with 4 divisions: 1280), so similar sizes share blocks.
  std::size_t roundup_power2_divisions = 0;
  // In (0, 1): before taking a new segment that would lift the reserved bytes
  // above this fraction of the device's memory, give back the free segments
  // that have been free the longest. 0 turns garbage collection off.
  double garbage_collection_threshold = 0.0;
  // Bytes each graph pool sets aside when it begins, before its capture
  // starts (a capture takes no memory from the device while it runs, and
  // PyTorch empties the cache just before a capture, so the idle segments a
  // pool may also adopt are often gone).
  std::size_t graph_pool_reserve = std::size_t{64} << 20;
  // One growing segment per stream and pool instead of many fixed ones: a
  // range of address space as large as the device is reserved, and physical
  // memory is mapped at its end in the device's granules as it is needed and
  // unmapped from its end as it empties (empty_cache, running out), so a
  // workload whose sizes keep changing reuses one span rather than stranding
  // memory in segments it cannot use (PyTorch's expandable_segments).
  bool expandable_segments = false;
  // Entries the trace ring keeps; 0 records nothing (and turns off the
  // what-if replay of the out-of-memory report, which replays the ring).
  std::size_t trace_capacity = 4096;
  // Where every traced action is also written, as a device trace
  // (strata/trace_format.hpp; STRATA_GPU_TRACE): "%p" becomes the process id,
  // "%d" the device's ordinal. Empty writes none. A file that cannot be
  // opened prints one line on stderr, and nothing is written.
  std::string trace_path;

  // Pool geometry, PyTorch's by default. Requests up to `small_size` come from
  // `small_segment`-byte segments; larger ones below `min_large_alloc` from
  // `large_segment`-byte segments; larger still from segments of their own
  // size rounded to `large_rounding`.
  std::size_t small_size = std::size_t{1} << 20;
  std::size_t small_segment = std::size_t{2} << 20;
  std::size_t large_segment = std::size_t{20} << 20;
  std::size_t min_large_alloc = std::size_t{10} << 20;
  std::size_t large_rounding = std::size_t{2} << 20;
};

// Parse "key:value,key:value" with the keys max_split_size_mb (an integer of
// MiB, above the small-request limit), roundup_power2_divisions (a power of
// two), garbage_collection_threshold (a fraction in (0, 1)) and
// graph_pool_reserve_mb (an integer of MiB) and expandable_segments (True or
// False) over `base`. backend:native is
// accepted (it is what this allocator is); backend:cudaMallocAsync is refused,
// naming strata's async_resource and the frameworks' own pools instead.
// A bad key or value throws std::invalid_argument naming it.
caching_config parse_caching_config(std::string_view text, caching_config base = {});

// The configuration STRATA_GPU_ALLOC_CONF gives (the defaults when unset),
// with STRATA_GPU_TRACE's trace_path.
caching_config caching_config_from_environment();

}  // namespace strata::gpu

#endif
