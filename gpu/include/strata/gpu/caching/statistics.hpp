// strata GPU caching allocator: its statistics, per pool and in all.
#ifndef STRATA_GPU_CACHING_STATISTICS_HPP
#define STRATA_GPU_CACHING_STATISTICS_HPP

#include <cstdint>

namespace strata::gpu {

// One quantity: its value now, its peak since the last reset, and how much was
// ever added to and taken from it since the last reset.
struct caching_stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;
};

// The quantities of one pool (small, large) or of both. Bytes: `reserved` is
// what the segments hold; `active` what is handed out or waits for events
// before it can be reused; `allocated` what is handed out (rounded);
// `requested` what the callers asked for; `inactive_split` the free bytes of
// segments that are split. Counts: segments, handed-out blocks, active blocks
// and free blocks of split segments. reserved == active + free, and free
// blocks of segments that are not split are whole cached segments.
struct caching_pool_stats {
  caching_stat segment;
  caching_stat allocation;
  caching_stat active;
  caching_stat inactive_split;
  caching_stat reserved_bytes;
  caching_stat allocated_bytes;
  caching_stat active_bytes;
  caching_stat inactive_split_bytes;
  caching_stat requested_bytes;
};

struct caching_stats {
  caching_pool_stats all;
  caching_pool_stats small;
  caching_pool_stats large;
  // Allocations served from the cache (on their stream or borrowed from another).
  std::uint64_t cache_hits = 0;
  // Allocations that needed a new segment from the device.
  std::uint64_t cache_misses = 0;
  // Cache hits on a block freed on another stream, after an event wait.
  std::uint64_t cross_stream_reuses = 0;
  // Times the device ran out and the cache was emptied before one more try.
  std::uint64_t num_alloc_retries = 0;
  // Allocations that failed after that retry.
  std::uint64_t num_ooms = 0;
  // Segments taken from and given back to the device.
  std::uint64_t num_device_allocs = 0;
  std::uint64_t num_device_frees = 0;
};

}  // namespace strata::gpu

#endif
