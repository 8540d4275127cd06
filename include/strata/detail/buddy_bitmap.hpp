// buddy's free sets: a bitmap with summary levels above it (a bit per word of
// the level below), so the lowest set bit is found in O(log64 n) word reads
// and setting or clearing a bit touches one word per level at most.
#ifndef STRATA_DETAIL_BUDDY_BITMAP_HPP
#define STRATA_DETAIL_BUDDY_BITMAP_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

class buddy_bitmap {
 public:
  // A bitmap of `bits` bits, all clear.
  explicit buddy_bitmap(std::size_t bits) {
    std::size_t count = bits;
    do {
      count = (count + 63) / 64;
      levels_.emplace_back(count, 0);
    } while (count > 1);
  }

  bool test(std::size_t i) const noexcept { return (levels_[0][i / 64] >> (i % 64)) & 1; }

  // Set bit i; a word that was empty sets its bit in the level above.
  void set(std::size_t i) noexcept {
    for (std::vector<std::uint64_t>& level : levels_) {
      std::uint64_t& word = level[i / 64];
      bool was_empty = word == 0;
      word |= std::uint64_t{1} << (i % 64);
      if (!was_empty) return;
      i /= 64;
    }
  }

  // Clear bit i; a word that becomes empty clears its bit in the level above.
  void clear(std::size_t i) noexcept {
    for (std::vector<std::uint64_t>& level : levels_) {
      std::uint64_t& word = level[i / 64];
      word &= ~(std::uint64_t{1} << (i % 64));
      if (word != 0) return;
      i /= 64;
    }
  }

  bool empty() const noexcept { return levels_.back()[0] == 0; }

  // The lowest set bit; the bitmap must not be empty.
  std::size_t first() const noexcept {
    std::size_t i = 0;
    for (std::size_t level = levels_.size(); level-- > 0;)
      i = i * 64 + static_cast<std::size_t>(__builtin_ctzll(levels_[level][i]));
    return i;
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // [0] holds the bits
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_BUDDY_BITMAP_HPP
