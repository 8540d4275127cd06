// bfc's index by size: the chunk record, and the free chunks binned by size
// class, each bin an ordered tree (a treap keyed by size, then address) built
// into the records themselves, with a bitmap of the bins that hold any.
//
// Best fit is O(log n): the request's own bin is searched for its smallest
// chunk that is large enough; failing that, the bitmap names the next bin
// that holds anything, whose smallest chunk is larger than the request. The
// exact bins (one size each) are plain lists: any of their chunks fits alike.
#ifndef STRATA_DETAIL_BFC_SIZE_BINS_HPP
#define STRATA_DETAIL_BFC_SIZE_BINS_HPP

#include <strata/detail/bfc_address_table.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

// One chunk of a region: where it lies, its neighbours in address order, and
// while it is free, its place in its bin's tree.
struct bfc_chunk {
  std::uintptr_t base;
  std::size_t size;
  std::uint32_t prev;  // the chunk before it in its region, or no_chunk
  std::uint32_t next;  // the chunk after it; also links spare records
  std::uint32_t left;  // tree links, while free
  std::uint32_t right;
  std::uint32_t parent;
  std::uint32_t priority;
  std::uint16_t bin;
  bool free;
};

// The free chunks by size. Sizes are multiples of the granule; the first 128
// bins hold one size each (up to 128 granules), then each power of two is cut
// into 64 bins (1.6% apart), so a bin's tree stays shallow: with 10,000 blocks
// of mixed sizes live, 32 bins per power of two cost 12% more time, 8 cost 40%.
class bfc_size_bins {
 public:
  static constexpr unsigned sub_bin_bits = 6;
  static constexpr unsigned exact_bins = 2u << sub_bin_bits;
  static constexpr unsigned bin_count =
      (1u << sub_bin_bits) + (64 - sub_bin_bits) * (1u << sub_bin_bits);

  explicit bfc_size_bins(unsigned granule_shift) noexcept : granule_shift_(granule_shift) {
    roots_.fill(no_chunk);
  }

  // The bin of a size (a multiple of the granule, not zero).
  unsigned bin_of(std::size_t size) const noexcept {
    std::size_t units = size >> granule_shift_;
    if (units < exact_bins) return static_cast<unsigned>(units);
    unsigned top = 63u - static_cast<unsigned>(__builtin_clzll(units));
    return (1u << sub_bin_bits) + (top - sub_bin_bits) * (1u << sub_bin_bits) +
           static_cast<unsigned>((units >> (top - sub_bin_bits)) & ((1u << sub_bin_bits) - 1));
  }

  // Add the free chunk `i` to its bin.
  void insert(std::vector<bfc_chunk>& chunks, std::uint32_t i) noexcept {
    bfc_chunk& c = chunks[i];
    unsigned bin = bin_of(c.size);
    c.bin = static_cast<std::uint16_t>(bin);
    c.left = c.right = no_chunk;
    std::uint32_t at = roots_[bin];
    if (bin < exact_bins) {
      c.right = at;
      if (at != no_chunk) chunks[at].left = i;
      roots_[bin] = i;
      mark(bin);
      return;
    }
    if (at == no_chunk) {
      c.parent = no_chunk;
      roots_[bin] = i;
      mark(bin);
      return;
    }
    for (;;) {
      bfc_chunk& node = chunks[at];
      std::uint32_t& link = before(c, node) ? node.left : node.right;
      if (link == no_chunk) {
        link = i;
        break;
      }
      at = link;
    }
    c.parent = at;
    while (c.parent != no_chunk && chunks[c.parent].priority < c.priority) rotate_up(chunks, i);
  }

  // Take the free chunk `i` out of its bin.
  void erase(std::vector<bfc_chunk>& chunks, std::uint32_t i) noexcept {
    bfc_chunk& c = chunks[i];
    if (c.bin < exact_bins) {
      (c.left == no_chunk ? roots_[c.bin] : chunks[c.left].right) = c.right;
      if (c.right != no_chunk) chunks[c.right].left = c.left;
      if (roots_[c.bin] == no_chunk) unmark(c.bin);
      return;
    }
    while (c.left != no_chunk || c.right != no_chunk) {
      std::uint32_t child = c.left == no_chunk                                   ? c.right
                            : c.right == no_chunk                                ? c.left
                            : chunks[c.left].priority > chunks[c.right].priority ? c.left
                                                                                 : c.right;
      rotate_up(chunks, child);
    }
    if (c.parent == no_chunk) {
      roots_[c.bin] = no_chunk;
      unmark(c.bin);
    } else {
      bfc_chunk& p = chunks[c.parent];
      (p.left == i ? p.left : p.right) = no_chunk;
    }
  }

  // The smallest free chunk of at least `size` bytes (a multiple of the
  // granule; among equals the lowest address, or any in an exact bin), or
  // no_chunk.
  std::uint32_t best_fit(const std::vector<bfc_chunk>& chunks, std::size_t size) const noexcept {
    unsigned bin = bin_of(size);
    if (bin < exact_bins && roots_[bin] != no_chunk) return roots_[bin];
    std::uint32_t best = no_chunk;
    for (std::uint32_t at = roots_[bin]; at != no_chunk;) {
      if (chunks[at].size >= size) {
        best = at;
        at = chunks[at].left;
      } else {
        at = chunks[at].right;
      }
    }
    if (best != no_chunk) return best;
    unsigned next = first_occupied_after(bin);
    if (next == bin_count) return no_chunk;
    std::uint32_t at = roots_[next];
    if (next < exact_bins) return at;
    while (chunks[at].left != no_chunk) at = chunks[at].left;
    return at;
  }

  // The largest free chunk, or no_chunk.
  std::uint32_t largest(const std::vector<bfc_chunk>& chunks) const noexcept {
    if (summary_ == 0) return no_chunk;
    unsigned word = 63u - static_cast<unsigned>(__builtin_clzll(summary_));
    unsigned bin = word * 64 + 63u - static_cast<unsigned>(__builtin_clzll(occupied_[word]));
    std::uint32_t at = roots_[bin];
    if (bin < exact_bins) return at;
    while (chunks[at].right != no_chunk) at = chunks[at].right;
    return at;
  }

 private:
  // Tree order: by size, then by address.
  static bool before(const bfc_chunk& a, const bfc_chunk& b) noexcept {
    return a.size < b.size || (a.size == b.size && a.base < b.base);
  }

  // The first bin above `bin` that holds a free chunk, or bin_count.
  // Two words at most: the rest of the bin's own word, then the summary.
  unsigned first_occupied_after(unsigned bin) const noexcept {
    unsigned start = bin + 1;
    if (start >= bin_count) return bin_count;
    unsigned word = start / 64;
    std::uint64_t bits = occupied_[word] & (~std::uint64_t{0} << (start % 64));
    if (bits != 0) return word * 64 + static_cast<unsigned>(__builtin_ctzll(bits));
    std::uint64_t later = word == 63 ? 0 : summary_ & (~std::uint64_t{0} << (word + 1));
    if (later == 0) return bin_count;
    word = static_cast<unsigned>(__builtin_ctzll(later));
    return word * 64 + static_cast<unsigned>(__builtin_ctzll(occupied_[word]));
  }

  // Record that `bin` holds a chunk.
  void mark(unsigned bin) noexcept {
    occupied_[bin / 64] |= std::uint64_t{1} << (bin % 64);
    summary_ |= std::uint64_t{1} << (bin / 64);
  }

  // Record that `bin` is empty.
  void unmark(unsigned bin) noexcept {
    occupied_[bin / 64] &= ~(std::uint64_t{1} << (bin % 64));
    if (occupied_[bin / 64] == 0) summary_ &= ~(std::uint64_t{1} << (bin / 64));
  }

  // Lift `i` above its parent, keeping the tree order.
  void rotate_up(std::vector<bfc_chunk>& chunks, std::uint32_t i) noexcept {
    bfc_chunk& c = chunks[i];
    std::uint32_t up = c.parent;
    bfc_chunk& p = chunks[up];
    std::uint32_t grand = p.parent;
    if (p.left == i) {
      p.left = c.right;
      if (c.right != no_chunk) chunks[c.right].parent = up;
      c.right = up;
    } else {
      p.right = c.left;
      if (c.left != no_chunk) chunks[c.left].parent = up;
      c.left = up;
    }
    p.parent = i;
    c.parent = grand;
    if (grand == no_chunk)
      roots_[c.bin] = i;
    else
      (chunks[grand].left == up ? chunks[grand].left : chunks[grand].right) = i;
  }

  std::array<std::uint32_t, bin_count> roots_;
  std::array<std::uint64_t, (bin_count + 63) / 64> occupied_{};
  std::uint64_t summary_ = 0;  // bit w: occupied_[w] is not zero
  static_assert((bin_count + 63) / 64 <= 64, "one summary word covers every bin");
  unsigned granule_shift_;
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_BFC_SIZE_BINS_HPP
