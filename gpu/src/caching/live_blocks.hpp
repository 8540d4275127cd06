// strata GPU caching allocator, private: the blocks handed out, by address.
// An open-addressing table (linear probing, backward-shift deletion), so the
// hot path's lookup, insertion and removal allocate nothing and touch one or
// two cache lines.
#ifndef STRATA_GPU_SRC_CACHING_LIVE_BLOCKS_HPP
#define STRATA_GPU_SRC_CACHING_LIVE_BLOCKS_HPP

#include "block.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::gpu::caching {

class live_blocks {
 public:
  live_blocks() : slots_(64) {}

  // Remember `b` under its address.
  void insert(block* b) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    place(b);
    ++count_;
  }

  // The block handed out at `p`, or null.
  block* find(const void* p) const noexcept {
    for (std::size_t i = home(p);; i = (i + 1) & mask()) {
      block* b = slots_[i];
      if (b == nullptr || b->ptr == p) return b;
    }
  }

  // Forget the block at `p` and return it, or return null if there is none.
  // Later entries of the probe run shift back, so no tombstones build up.
  block* take(const void* p) noexcept {
    std::size_t i = home(p);
    while (slots_[i] != nullptr && slots_[i]->ptr != p) i = (i + 1) & mask();
    block* found = slots_[i];
    if (found == nullptr) return nullptr;
    for (std::size_t j = (i + 1) & mask(); slots_[j] != nullptr; j = (j + 1) & mask()) {
      // Move the entry at j into the hole at i unless its home lies in (i, j].
      const std::size_t h = home(slots_[j]->ptr);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = nullptr;
    --count_;
    return found;
  }

 private:
  std::size_t mask() const noexcept { return slots_.size() - 1; }

  // Fibonacci hashing of the address: blocks sit at multiples of 512 bytes,
  // and the multiplication spreads those over the table.
  std::size_t home(const void* p) const noexcept {
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> 32) & mask();
  }

  // Put `b` in the first empty slot from its home.
  void place(block* b) noexcept {
    std::size_t i = home(b->ptr);
    while (slots_[i] != nullptr) i = (i + 1) & mask();
    slots_[i] = b;
  }

  // Double the table, keeping the load at most one half.
  void grow() {
    std::vector<block*> old(slots_.size() * 2, nullptr);
    old.swap(slots_);
    for (block* b : old)
      if (b != nullptr) place(b);
  }

  std::vector<block*> slots_;
  std::size_t count_ = 0;
};

}  // namespace strata::gpu::caching

#endif
