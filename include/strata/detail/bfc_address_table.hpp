// bfc's index by address: an open-addressing hash table from the start
// address of each chunk in use to its record, so deallocate finds a block
// without reading the managed memory, and a pointer that is no live block's
// start is found to be so. Free chunks are not in it: splits and merges
// never touch it, and an allocate+free pair costs one insert and one erase.
#ifndef STRATA_DETAIL_BFC_ADDRESS_TABLE_HPP
#define STRATA_DETAIL_BFC_ADDRESS_TABLE_HPP

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::detail {

// The record number standing for "no chunk".
inline constexpr std::uint32_t no_chunk = UINT32_MAX;

// Linear probing, at most a quarter full (short probe runs: with 10,000
// blocks live a pair took 52 ns at half full, 44 ns so), deletion by backward
// shift (no tombstones, so a long run of allocations and frees never slows
// the probes down).
class bfc_address_table {
 public:
  // The slot holding `address` (not zero), or npos.
  std::size_t find(std::uintptr_t address) const noexcept {
    if (slots_.empty()) return npos;
    for (std::size_t i = home(address);; i = (i + 1) & mask_) {
      if (slots_[i].key == address) return i;
      if (slots_[i].key == 0) return npos;
    }
  }

  // The record in a slot find returned.
  std::uint32_t value(std::size_t slot) const noexcept { return slots_[slot].value; }

  // Grow now if `more` inserts would leave the table over a quarter full, so the
  // inserts themselves cannot fail.
  void make_room(std::size_t more) {
    if ((count_ + more) * 4 > slots_.size()) grow();
  }

  // Record that the chunk `value` starts at `address` (not yet in the table);
  // make_room reserved its slot.
  void insert(std::uintptr_t address, std::uint32_t value) noexcept {
    place(address, value);
    ++count_;
  }

  // Empty a slot find returned: later entries of its probe run move back.
  void erase(std::size_t hole) noexcept {
    for (std::size_t j = (hole + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      std::size_t want = home(slots_[j].key);
      // The entry at j may fill the hole unless its home lies after the hole.
      bool stays = hole <= j ? (want > hole && want <= j) : (want > hole || want <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = 0;
    --count_;
  }

  std::size_t size() const noexcept { return count_; }

  static constexpr std::size_t npos = SIZE_MAX;

 private:
  struct slot {
    std::uintptr_t key;
    std::uint32_t value;
  };

  // Fibonacci hashing of the address: the top bits of the product.
  std::size_t home(std::uintptr_t address) const noexcept {
    return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15u) >> shift_);
  }

  // Store an entry in the first empty slot of its probe run.
  void place(std::uintptr_t address, std::uint32_t value) noexcept {
    std::size_t i = home(address);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = {address, value};
  }

  // Twice the slots, every entry placed again.
  [[gnu::cold, gnu::noinline]] void grow() {
    std::vector<slot> old = std::move(slots_);
    std::size_t capacity = old.empty() ? 64 : old.size() * 2;
    slots_.assign(capacity, slot{0, 0});
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    for (const slot& s : old)
      if (s.key != 0) place(s.key, s.value);
  }

  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t count_ = 0;
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_BFC_ADDRESS_TABLE_HPP
