// Sizes and alignments the C++ allocator fuzz targets ask for: edge cases
// (zero, sizes whose rounding overflows, alignments that are no power of two
// or larger than any chunk) mixed with ordinary ones.
#ifndef STRATA_FUZZ_SIZES_HPP
#define STRATA_FUZZ_SIZES_HPP

#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"

namespace strata::fuzz {

// A size: mostly small, now and then an edge case or a large one.
inline std::size_t pick_size(fuzz_input& in) {
  switch (in.byte() % 16) {
    case 0:
      return in.pick<std::size_t>({0, 1, 7, 15, 16, 17, 255, 256, 4095, 4096, 65536, SIZE_MAX,
                                   SIZE_MAX - 1, SIZE_MAX - 63, SIZE_MAX / 2,
                                   std::size_t{1} << 62});
    case 1:
      return in.number(3) % (std::size_t{4} << 20);
    case 2:
    case 3:
      return in.below(65536);
    default:
      return in.below(300);
  }
}

// An alignment: mostly a small power of two, now and then a bad or huge one.
inline std::size_t pick_alignment(fuzz_input& in) {
  if (in.byte() % 8 == 0)
    return in.pick<std::size_t>(
        {0, 3, 24, 48, std::size_t{1} << 20, std::size_t{1} << 40, std::size_t{1} << 63, SIZE_MAX});
  return std::size_t{1} << in.below(8);
}

inline bool power_of_two(std::size_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_SIZES_HPP
