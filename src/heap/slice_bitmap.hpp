// Bit ranges over a segment's slice maps (free, dirty), a word at a time.
//
// A page of 1 MiB blocks spans 16 slices and one of 8 MiB 128, so a refill
// that walked bit by bit cost hundreds of instructions; here each operation
// costs a few instructions per 64-bit word it touches.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace strata::heap::slice_bitmap {

// Mask of the bits of word `w` that fall in [first, end).
inline std::uint64_t word_mask(std::size_t w, std::size_t first, std::size_t end) {
  std::size_t lo = first > w * 64 ? first - w * 64 : 0;
  std::size_t hi = end < (w + 1) * 64 ? end - w * 64 : 64;
  std::uint64_t upto_hi = hi == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << hi) - 1;
  return upto_hi & ~((std::uint64_t{1} << lo) - 1);
}

// Set (value true) or clear the bits [first, first + count).
inline void assign(std::uint64_t* map, std::size_t first, std::size_t count, bool value) {
  std::size_t end = first + count;
  for (std::size_t w = first / 64; w * 64 < end; ++w) {
    std::uint64_t mask = word_mask(w, first, end);
    map[w] = value ? map[w] | mask : map[w] & ~mask;
  }
}

// Number of set bits in [first, first + count).
inline std::size_t count(const std::uint64_t* map, std::size_t first, std::size_t count) {
  std::size_t end = first + count;
  std::size_t n = 0;
  for (std::size_t w = first / 64; w * 64 < end; ++w)
    n += static_cast<std::size_t>(std::popcount(map[w] & word_mask(w, first, end)));
  return n;
}

// Index of the first bit at or after `i` (and below `bits`) whose value is
// `value`; `bits` when there is none.
inline std::size_t next(const std::uint64_t* map, std::size_t bits, std::size_t i, bool value) {
  while (i < bits) {
    std::uint64_t word = (value ? map[i / 64] : ~map[i / 64]) >> (i % 64);
    if (word != 0) {
      i += static_cast<std::size_t>(std::countr_zero(word));
      return i < bits ? i : bits;
    }
    i = (i / 64 + 1) * 64;
  }
  return bits;
}

// First index at or after `from` that starts a run of `count` set bits lying
// below `bits`; `bits` when there is none. Each run is measured in whole words
// and only as far as `count` bits, so the search costs a few steps per run.
inline std::size_t find_run(const std::uint64_t* map, std::size_t bits, std::size_t from,
                            std::size_t count) {
  for (std::size_t start = next(map, bits, from, true); start < bits;) {
    if (bits - start < count) return bits;
    std::size_t end = next(map, start + count, start, false);
    if (end == start + count) return start;
    start = next(map, bits, end, true);
  }
  return bits;
}

// First bit set in `starts` that begins a run of `count` set bits in `map`
// lying below `bits`; `bits` when there is none.
inline std::size_t find_run_at(const std::uint64_t* map, const std::uint64_t* starts,
                               std::size_t bits, std::size_t count) {
  for (std::size_t w = 0; w * 64 < bits; ++w) {
    for (std::uint64_t candidates = map[w] & starts[w]; candidates != 0;
         candidates &= candidates - 1) {
      std::size_t start = w * 64 + static_cast<std::size_t>(std::countr_zero(candidates));
      if (start + count <= bits && next(map, start + count, start, false) == start + count)
        return start;
    }
  }
  return bits;
}

// First set bit at or after `from` whose neighbours are both clear, a run of
// exactly one; `bits` (a multiple of 64) when there is none.
inline std::size_t find_lone(const std::uint64_t* map, std::size_t bits, std::size_t from) {
  std::size_t words = bits / 64;
  for (std::size_t w = from / 64; w < words; ++w) {
    std::uint64_t x = map[w];
    std::uint64_t set_below = (x << 1) | (w > 0 ? map[w - 1] >> 63 : 0);
    std::uint64_t set_above = (x >> 1) | (w + 1 < words ? map[w + 1] << 63 : 0);
    std::uint64_t lone = x & ~set_below & ~set_above;
    if (w == from / 64) lone &= ~std::uint64_t{0} << (from % 64);
    if (lone != 0) return w * 64 + static_cast<std::size_t>(std::countr_zero(lone));
  }
  return bits;
}

// Start of the shortest run of at least `count` set bits at or after `from`,
// the first of equally short ones; `bits` when there is none.
inline std::size_t find_shortest_run(const std::uint64_t* map, std::size_t bits, std::size_t from,
                                     std::size_t count) {
  std::size_t best = bits;
  std::size_t best_length = bits + 1;
  for (std::size_t start = next(map, bits, from, true); start < bits;) {
    std::size_t end = next(map, bits, start, false);
    std::size_t length = end - start;
    if (length >= count && length < best_length) {
      best = start;
      best_length = length;
      if (length == count) break;  // nothing fits closer
    }
    start = next(map, bits, end, true);
  }
  return best;
}

}  // namespace strata::heap::slice_bitmap
