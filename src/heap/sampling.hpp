// The sampling hook of the allocation entry points: guarded sampling
// (guarded/) and the heap profiler (profile/) each take about one allocation
// in so many. While neither is on (nor the override's trace recorder, which
// shares the hook), an entry point pays one load and a branch not taken, the
// test the trace recorder always cost; once on, a sampled entry point pays a
// counter decrement per feature in the out-of-line sampled path.
#pragma once

#include <cstddef>

#include "heap/heap.hpp"

namespace strata::heap {

// Set once at start-up (a forked child keeps it): a plain flag, so the test
// is one compare of memory with zero.
extern bool sampling_enabled __attribute__((visibility("hidden")));

inline bool sampling_on() noexcept {
  return sampling_enabled;
}

// Read STRATA_GUARDED_* and STRATA_PROFILE*, set the features up and turn the
// hook on when one of them is asked for; later calls do nothing.
void sampling_start() noexcept;

// Turn the hook on for the trace recorder, which records in its sampled path.
void sampling_force_on() noexcept;

// malloc through the samplers: a guarded or profiled block when this
// allocation is drawn, else heap_malloc(h, size).
void* malloc_sampled(heap* h, std::size_t size) noexcept;

// heap_malloc, or malloc_sampled while the hook is on: what the C API calls.
inline void* malloc_hooked(heap* h, std::size_t size) noexcept {
  if (STRATA_UNLIKELY(sampling_on())) return malloc_sampled(h, size);
  return heap_malloc(h, size);
}

// heap_malloc_aligned through the samplers: when this allocation is drawn, a
// guarded block (alignment up to a page) or a profiled one (up to the segment
// size) aligned as asked, else heap_malloc_aligned(h, size, alignment).
void* malloc_aligned_sampled(heap* h, std::size_t size, std::size_t alignment) noexcept;

// heap_malloc_aligned, or malloc_aligned_sampled while the hook is on.
inline void* malloc_aligned_hooked(heap* h, std::size_t size, std::size_t alignment) noexcept {
  if (STRATA_UNLIKELY(sampling_on())) return malloc_aligned_sampled(h, size, alignment);
  return heap_malloc_aligned(h, size, alignment);
}

// A block that is not in strata's segments but one of the samplers': its
// usable bytes (what was asked for), or 0 when no sampler owns `p`.
std::size_t sampled_usable_size(const void* p) noexcept;
// Free it; false when no sampler owns `p`.
bool sampled_free(void* p) noexcept;

}  // namespace strata::heap
