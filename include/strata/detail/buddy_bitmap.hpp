// buddy's free sets: a bitmap with summary levels above it (a bit per word of
// the level below), so the lowest set bit is found in O(log64 n) word reads
// and setting or clearing a bit touches one word per level at most.
#ifndef STRATA_DETAIL_BUDDY_BITMAP_HPP
#define STRATA_DETAIL_BUDDY_BITMAP_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

class buddy_bitmap {
 public:
  // A bitmap of `bits` bits, all clear.
  explicit buddy_bitmap(std::size_t bits) {
    std::size_t count = bits, total = 0;
    do {
      count = (count + 63) / 64;
      start_[depth_++] = total;
      total += count;
    } while (count > 1);
    words_.assign(total, 0);
  }

  bool test(std::size_t i) const noexcept { return (words_[i / 64] >> (i % 64)) & 1; }

  // Set bit i; a word that was empty sets its bit in the level above.
  void set(std::size_t i) noexcept {
    for (unsigned level = 0; level < depth_; ++level) {
      std::uint64_t& word = words_[start_[level] + i / 64];
      bool was_empty = word == 0;
      word |= std::uint64_t{1} << (i % 64);
      if (!was_empty) return;
      i /= 64;
    }
  }

  // Clear bit i; a word that becomes empty clears its bit in the level above.
  void clear(std::size_t i) noexcept {
    for (unsigned level = 0; level < depth_; ++level) {
      std::uint64_t& word = words_[start_[level] + i / 64];
      word &= ~(std::uint64_t{1} << (i % 64));
      if (word != 0) return;
      i /= 64;
    }
  }

  bool empty() const noexcept { return words_.back() == 0; }

  // The lowest set bit; the bitmap must not be empty.
  std::size_t first() const noexcept {
    std::size_t i = 0;
    for (unsigned level = depth_; level-- > 0;)
      i = i * 64 + static_cast<std::size_t>(__builtin_ctzll(words_[start_[level] + i]));
    return i;
  }

 private:
  std::vector<std::uint64_t> words_;     // level 0 (the bits) first, the one top word last
  std::array<std::size_t, 12> start_{};  // where each level begins in words_
  unsigned depth_ = 0;
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_BUDDY_BITMAP_HPP
