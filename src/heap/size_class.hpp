// Size classes: 16-byte steps up to 128 bytes, then four classes per power of
// two up to 8 MiB, but eight from 256 B to 32 KiB, where most of a program's
// bytes are and a power-of-two payload with a header is common: redis's
// 262-byte strings take 288 bytes, not 320. From 4 to 16 KiB, where a page is
// one 64 KiB slice (to 8 KiB) or two, the eight classes of each power of two
// are the page's size / n for n = 15 .. 8 (rounded down to 16 bytes): a page
// then holds its blocks with no tail left over, where 5,120-byte blocks left
// 4 KiB of each page and 13,312-byte ones 11 KiB; sqlite's 4,368-byte
// page-cache entries fill a page fifteen to one. Larger requests are "huge"
// and get their own segment.
//
//   class 0..7    16, 32, ..., 128
//   class 8..11   2^7 + j * 2^5 for j = 1..4                  (160, 192, 224, 256)
//   class 12..67  2^k + j * 2^(k-3) for k = 8..14, j = 1..8   (288, 320, 352, ... 32768)
//                 but for k = 12, 13: 2^(k+4) / (16 - j)      (4368, 4672, ... 16384)
//   class 68..99  2^k + j * 2^(k-2) for k = 15..22, j = 1..4  (40960, 49152, ... 8 MiB)
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace strata::heap {

inline constexpr std::size_t min_block_size = 16;
inline constexpr std::size_t class_count = 100;
inline constexpr std::size_t small_max = 1024;       // served through the direct page table
inline constexpr std::size_t medium_max = 8u << 20;  // largest size class
inline constexpr std::size_t direct_slots = small_max / 16 + 1;

// The powers of two split in eight classes rather than four: 2^k for k in [8, 14].
constexpr bool split_in_eight(std::size_t k) {
  return k >= 8 && k <= 14;
}

// log2 of the step between classes within [2^k, 2^(k+1)).
constexpr std::size_t step_shift(std::size_t k) {
  return split_in_eight(k) ? k - 3 : k - 2;
}

// First class above 2^k, for k = 7..23 (index k - 7).
inline constexpr std::array<std::uint8_t, 17> first_class_above = [] {
  std::array<std::uint8_t, 17> t{};
  std::size_t cls = 8;
  for (std::size_t k = 7; k < 24; ++k) {
    t[k - 7] = static_cast<std::uint8_t>(cls);
    cls += split_in_eight(k) ? 8 : 4;
  }
  return t;
}();

// The powers of two 2^k whose classes are cut to fill a page of 2^(k+4) bytes:
// 4 KiB and 8 KiB, whose pages are one and two 64 KiB slices.
constexpr bool fills_page(std::size_t k) {
  return k == 12 || k == 13;
}

// Size of class `cls` computed from its definition (used to build tables).
constexpr std::size_t class_size_formula(std::size_t cls) {
  if (cls < 8) return (cls + 1) * 16;
  std::size_t k = 7;
  while (first_class_above[k + 1 - 7] <= cls) ++k;
  std::size_t j = cls - first_class_above[k - 7] + 1;
  if (fills_page(k)) return (std::size_t{1} << (k + 4)) / (16 - j) / 16 * 16;
  return (std::size_t{1} << k) + j * (std::size_t{1} << step_shift(k));
}

inline constexpr std::array<std::uint32_t, class_count> class_sizes = [] {
  std::array<std::uint32_t, class_count> t{};
  for (std::size_t c = 0; c < class_count; ++c)
    t[c] = static_cast<std::uint32_t>(class_size_formula(c));
  return t;
}();

inline constexpr std::size_t class_block_size(std::size_t cls) {
  return class_sizes[cls];
}

// Class of a request of `size` bytes (0 < size <= medium_max): no division, and
// a loop of at most eight steps only between 4 and 16 KiB.
constexpr std::size_t size_class_of(std::size_t size) {
  if (size <= 128) return size == 0 ? 0 : (size - 1) >> 4;
  std::size_t w = size - 1;
  std::size_t k = static_cast<std::size_t>(std::bit_width(w)) - 1;  // w in [2^k, 2^(k+1))
  if (fills_page(k)) {
    std::size_t cls = first_class_above[k - 7];
    while (class_sizes[cls] < size) ++cls;
    return cls;
  }
  std::size_t mask = split_in_eight(k) ? 7 : 3;
  return first_class_above[k - 7] + ((w >> step_shift(k)) & mask);
}

// Class of each 16-byte slot of small sizes: slot = (size + 15) / 16.
inline constexpr std::array<std::uint8_t, direct_slots> small_class_of_slot = [] {
  std::array<std::uint8_t, direct_slots> t{};
  for (std::size_t s = 0; s < direct_slots; ++s)
    t[s] = static_cast<std::uint8_t>(size_class_of(s == 0 ? 1 : s * 16));
  return t;
}();

// Class of each medium request (small_max < size <= medium_max) by table: up
// to 64 KiB every class boundary is a multiple of 16 B, and up to 8 MiB of
// 16 KiB, so entries [0, 4096) cover (0, 64 KiB] in 16 B steps and the rest
// cover (0, 8 MiB] in 16 KiB steps.
inline constexpr std::size_t medium_fine_max = 65536;  // the fine part's largest request
inline constexpr std::size_t medium_fine_shift = 4;
inline constexpr std::size_t medium_fine_steps = medium_fine_max >> medium_fine_shift;
inline constexpr std::size_t medium_table_size = medium_fine_steps + (medium_max >> 14);
inline constexpr std::array<std::uint8_t, medium_table_size> medium_class_table = [] {
  std::array<std::uint8_t, medium_table_size> t{};
  for (std::size_t s = 0; s < medium_fine_steps; ++s)
    t[s] = static_cast<std::uint8_t>(size_class_of((s + 1) << medium_fine_shift));
  for (std::size_t s = medium_fine_steps; s < medium_table_size; ++s)
    t[s] = static_cast<std::uint8_t>(size_class_of((s - medium_fine_steps + 1) << 14));
  return t;
}();

// Class of a medium request up to 64 KiB (small_max < size <= medium_fine_max):
// one shift and one table load, for malloc's fast path.
inline std::size_t medium_fine_class_of(std::size_t size) {
  return medium_class_table[(size - 1) >> medium_fine_shift];
}

// Class of a medium request above 64 KiB (medium_fine_max < size <= medium_max).
inline std::size_t medium_coarse_class_of(std::size_t size) {
  return medium_class_table[medium_fine_steps + ((size - 1) >> 14)];
}

// Class of any medium request (small_max < size <= medium_max).
inline std::size_t medium_class_of(std::size_t size) {
  return size <= medium_fine_max ? medium_fine_class_of(size) : medium_coarse_class_of(size);
}

static_assert(class_size_formula(class_count - 1) == medium_max);
static_assert(class_size_formula(11) == 256 && class_size_formula(12) == 288);
static_assert(class_size_formula(67) == 32768 && class_size_formula(68) == 40960);
static_assert(size_class_of(small_max) == 27);
static_assert(class_size_formula(44) == 4368 && class_size_formula(51) == 8192);
static_assert(class_size_formula(52) == 8736 && class_size_formula(59) == 16384);

}  // namespace strata::heap
