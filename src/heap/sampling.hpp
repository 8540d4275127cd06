// The sampling hook of the allocation entry points: guarded sampling
// (guarded/) and the heap profiler (profile/) each take about one allocation
// in so many, and the override's trace recorder records every one. Each entry
// point counts its allocation once, down a per-thread countdown beside the
// thread's heap: a decrement and a sign test, the whole cost while nothing
// samples. When it runs out the allocation goes through malloc_sampled, which
// sets the countdown again: 2^20 allocations on while sampling is off, to the
// next guarded draw when guarded sampling is on alone, to the next allocation
// while the profiler's byte countdown or the trace recorder must see each one.
#pragma once

#include <cerrno>
#include <cstddef>

#include "heap/heap.hpp"

namespace strata::heap {

// Count one allocation: true when the countdown ran out and the allocation
// must go through malloc_sampled or malloc_aligned_sampled.
inline bool sample_due() noexcept {
  return --tls_entry.sample_countdown < 0;
}

// Read STRATA_GUARDED_* and STRATA_PROFILE*, set the features up and start the
// hook when one of them is asked for; later calls do nothing.
void sampling_start() noexcept;

// Send every allocation through the hook, for the trace recorder, which
// records on that path.
void sampling_force_on() noexcept;

// malloc after its countdown ran out: a guarded or profiled block when this
// allocation is drawn, else heap_malloc(h, size).
void* malloc_sampled(heap* h, std::size_t size) noexcept;

// heap_malloc, counted: what the C API calls.
inline void* malloc_hooked(heap* h, std::size_t size) noexcept {
  if (STRATA_UNLIKELY(sample_due())) return malloc_sampled(h, size);
  return heap_malloc(h, size);
}

// heap_malloc_aligned after its countdown ran out: when this allocation is
// drawn, a guarded block (alignment up to a page) or a profiled one (up to the
// segment size) aligned as asked, else heap_malloc_aligned(h, size, alignment).
void* malloc_aligned_sampled(heap* h, std::size_t size, std::size_t alignment) noexcept;

// heap_malloc_aligned, counted.
inline void* malloc_aligned_hooked(heap* h, std::size_t size, std::size_t alignment) noexcept {
  if (STRATA_UNLIKELY(sample_due())) return malloc_aligned_sampled(h, size, alignment);
  return heap_malloc_aligned(h, size, alignment);
}

// An aligned allocation from the calling thread's default heap that its entry
// point counted already (through the samplers when `drawn`): null with errno
// ENOMEM or EINVAL as strata_malloc_aligned answers.
void* malloc_aligned_counted(std::size_t size, std::size_t alignment, bool drawn) noexcept;

// strata_malloc_aligned inline: counted, then the heap's inline aligned path
// when it applies.
inline void* malloc_aligned_entry(std::size_t size, std::size_t alignment) noexcept {
  bool drawn = sample_due();
  if (STRATA_LIKELY(!drawn)) {
    void* p = heap_malloc_aligned_fast(tls_entry.own_heap, size, alignment);
    if (STRATA_LIKELY(p != nullptr)) return p;
  }
  return malloc_aligned_counted(size, alignment, drawn);
}

// posix_memalign past its inline path: the block from malloc_aligned_counted
// put in `*out`, its error (ENOMEM, EINVAL) returned and errno left as it was.
int posix_memalign_counted(void** out, std::size_t size, std::size_t alignment,
                           bool drawn) noexcept;

// strata_posix_memalign inline: an alignment POSIX refuses answered EINVAL,
// then counted and the heap's inline aligned path, as malloc_aligned_entry.
inline int posix_memalign_entry(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (out == nullptr || alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  bool drawn = sample_due();
  if (STRATA_LIKELY(!drawn)) {
    void* p = heap_malloc_aligned_fast(tls_entry.own_heap, size, alignment);
    if (STRATA_LIKELY(p != nullptr)) {
      *out = p;
      return 0;
    }
  }
  return posix_memalign_counted(out, size, alignment, drawn);
}

// A block that is not in strata's segments but one of the samplers': its
// usable bytes (what was asked for), or 0 when no sampler owns `p`.
std::size_t sampled_usable_size(const void* p) noexcept;
// Free it; false when no sampler owns `p`.
bool sampled_free(void* p) noexcept;

}  // namespace strata::heap
