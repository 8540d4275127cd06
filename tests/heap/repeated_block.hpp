// A program that allocates and frees one large block over and over: its
// one-block page should stay mapped and resident, not go back to the OS on
// every free (a small heap gives a one-block page back at once, but only the
// first time its class empties one).
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/strata.h"

namespace strata_test_heap {

// The OS calls `rounds` malloc/free pairs of `size` bytes make, each block
// written at both ends, after one pair to warm up.
inline std::uint64_t os_calls_of_repeated_block(std::size_t size, int rounds) {
  strata_free(strata_malloc(size));
  strata_stats_t before;
  strata_stats_get(&before);
  for (int i = 0; i < rounds; ++i) {
    auto* p = static_cast<char*>(strata_malloc(size));
    p[0] = p[size - 1] = 1;
    strata_free(p);
  }
  strata_stats_t after;
  strata_stats_get(&after);
  return after.os_calls - before.os_calls;
}

}  // namespace strata_test_heap
