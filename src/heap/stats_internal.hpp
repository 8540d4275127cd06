// Process-wide byte counters kept by the segment layer (slow paths only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::heap::global_stats {

extern std::atomic<std::size_t> committed;
extern std::atomic<std::size_t> peak_committed;
extern std::atomic<std::size_t> reserved;
extern std::atomic<std::size_t> purged;
extern std::atomic<std::size_t> huge_in_use;
extern std::atomic<std::uint64_t> segments;
extern std::atomic<std::uint64_t> segments_cached;
extern std::atomic<std::uint64_t> pages;

// Add to committed bytes and raise the peak.
void commit(std::size_t bytes);
inline void uncommit(std::size_t bytes) {
  committed.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace strata::heap::global_stats

namespace strata::heap {
// Sample the bytes in use for the peak statistic (when the heap maps memory).
void stats_sample_peak() noexcept;
}  // namespace strata::heap
