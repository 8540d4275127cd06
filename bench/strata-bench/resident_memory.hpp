// The resident set size of this process, read from /proc/self/statm.
#pragma once

#include <cstddef>

namespace strata_bench {

// Bytes of this process currently resident in RAM (0 if unknown).
std::size_t resident_bytes();

}  // namespace strata_bench
