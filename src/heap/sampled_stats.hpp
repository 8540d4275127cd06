// The samplers' blocks in strata_stats_get: a block guarded sampling or the
// heap profiler placed outside strata's segments is counted as the heap would
// count it (a malloc and a free of its class, its class's bytes in use, its
// pages committed and its address space reserved), so the statistics add up
// whether sampling is on or off. Sampled blocks are rare: plain atomics do.
#pragma once

#include <cstddef>

#include "strata/strata.h"

namespace strata::heap {

// A sampled block of `size` bytes handed out, its mapping `reserved` bytes of
// address space (0 when the sampler reserved its space up front).
void sampled_stats_malloc(std::size_t size, std::size_t reserved) noexcept;
// The same block freed, by a thread other than the one that allocated it when
// `other_thread`.
void sampled_stats_free(std::size_t size, std::size_t reserved, bool other_thread) noexcept;

// Address space a sampler reserved once (the guarded region).
void sampled_stats_reserve(std::size_t bytes) noexcept;

// Add the sampled blocks' counts to `out` (mallocs, frees, their classes,
// cross-thread frees, in_use and huge_in_use); committed and reserved are counted as they change.
void sampled_stats_add(strata_stats_t* out) noexcept;

}  // namespace strata::heap
