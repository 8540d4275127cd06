// The registry of live heaps, so statistics can add up every thread's counters.
#pragma once

#include "heap/heap.hpp"
#include "strata/strata.h"

namespace strata::heap {

void registry_add(heap* h) noexcept;
// Unregister `h`, folding its counters into the totals of retired heaps.
void registry_remove(heap* h) noexcept;
void registry_lock() noexcept;
void registry_unlock() noexcept;
// Sum of the counters of every heap, live and retired, into `out`.
void registry_sum(strata_stats_t* out) noexcept;

}  // namespace strata::heap
