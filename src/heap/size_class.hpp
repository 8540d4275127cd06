// Size classes: 16-byte steps up to 128 bytes, then four classes per power of
// two up to 8 MiB. Larger requests are "huge" and get their own segment.
//
//   class 0..7    16, 32, ..., 128
//   class 8..71   2^k + j * 2^(k-2) for k = 7..22, j = 1..4  (160, 192, 224, 256, 320, ...)
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace strata::heap {

inline constexpr std::size_t min_block_size = 16;
inline constexpr std::size_t class_count = 72;
inline constexpr std::size_t small_max = 1024;       // served through the direct page table
inline constexpr std::size_t medium_max = 8u << 20;  // largest size class
inline constexpr std::size_t direct_slots = small_max / 16 + 1;

// Size of class `cls` computed from its definition (used to build tables).
constexpr std::size_t class_size_formula(std::size_t cls) {
  if (cls < 8) return (cls + 1) * 16;
  std::size_t k = 7 + (cls - 8) / 4;
  std::size_t j = (cls - 8) % 4 + 1;
  return (std::size_t{1} << k) + j * (std::size_t{1} << (k - 2));
}

inline constexpr std::array<std::uint32_t, class_count> class_sizes = [] {
  std::array<std::uint32_t, class_count> t{};
  for (std::size_t c = 0; c < class_count; ++c)
    t[c] = static_cast<std::uint32_t>(class_size_formula(c));
  return t;
}();

// Class of a request of `size` bytes (0 < size <= medium_max): no loop, no division.
constexpr std::size_t size_class_of(std::size_t size) {
  if (size <= 128) return size == 0 ? 0 : (size - 1) >> 4;
  std::size_t w = size - 1;
  std::size_t k = static_cast<std::size_t>(std::bit_width(w)) - 1;  // w in [2^k, 2^(k+1))
  return 8 + (k - 7) * 4 + ((w >> (k - 2)) & 3);
}

inline constexpr std::size_t class_block_size(std::size_t cls) {
  return class_sizes[cls];
}

// Class of each 16-byte slot of small sizes: slot = (size + 15) / 16.
inline constexpr std::array<std::uint8_t, direct_slots> small_class_of_slot = [] {
  std::array<std::uint8_t, direct_slots> t{};
  for (std::size_t s = 0; s < direct_slots; ++s)
    t[s] = static_cast<std::uint8_t>(size_class_of(s == 0 ? 1 : s * 16));
  return t;
}();

// Class of each step of a table over (1 KiB, limit]: above 1 KiB every class
// boundary up to 64 KiB is a multiple of 128 B, and up to 8 MiB of 16 KiB.
template <std::size_t step_shift, std::size_t limit>
inline constexpr std::array<std::uint8_t, (limit >> step_shift)> class_of_step = [] {
  std::array<std::uint8_t, (limit >> step_shift)> t{};
  for (std::size_t s = 0; s < t.size(); ++s)
    t[s] = static_cast<std::uint8_t>(size_class_of((s + 1) << step_shift));
  return t;
}();

// Class of a medium request (small_max < size <= medium_max) for the fast path.
// Table loads rather than the bit scan of size_class_of: bsr keeps a false
// dependency on its output register, which chained each malloc to the last free.
inline std::size_t medium_class_of(std::size_t size) {
  if (size <= 65536) return class_of_step<7, 65536>[(size - 1) >> 7];
  return class_of_step<14, medium_max>[(size - 1) >> 14];
}

static_assert(class_size_formula(class_count - 1) == medium_max);
static_assert(size_class_of(small_max) == 19);

}  // namespace strata::heap
