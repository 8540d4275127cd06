// Which addresses may be live samples of the tracking adaptor's sampled mode:
// one bit per address hash, read without a lock on every free, so a block never
// drawn costs one load. 4096 bits fit in 512 bytes (eight cache lines, which
// stay in L1 between frees even while the program streams through its blocks;
// a byte per hash missed L1 on most frees). Several samples may share a bit:
// a count per bit, touched only under the sample table's lock, clears it when
// the last of them goes.
#ifndef STRATA_DETAIL_SAMPLE_FILTER_HPP
#define STRATA_DETAIL_SAMPLE_FILTER_HPP

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::detail {

class sample_filter {
 public:
  // Whether `p` may be a live sample (false: certainly not).
  bool may_hold(const void* p) const noexcept {
    const std::size_t slot = slot_of(p);
    return (words_[slot / 64].load(std::memory_order_relaxed) >> (slot % 64) & 1) != 0;
  }

  // A sample now lives at `p`. The caller holds the sample table's lock.
  void add(const void* p) noexcept {
    const std::size_t slot = slot_of(p);
    if (counts_[slot]++ == 0) flip(slot);
  }

  // The sample at `p` is gone. The caller holds the sample table's lock.
  void remove(const void* p) noexcept {
    const std::size_t slot = slot_of(p);
    if (--counts_[slot] == 0) flip(slot);
  }

 private:
  static constexpr int slot_bits = 12;
  static constexpr std::size_t slots = std::size_t{1} << slot_bits;

  // The slot of address `p`: Fibonacci hashing, so nearby blocks spread.
  static std::size_t slot_of(const void* p) noexcept {
    return static_cast<std::size_t>(
        (static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)) * 0x9e3779b97f4a7c15ull) >>
        (64 - slot_bits));
  }

  // Set or clear a slot's bit: only the lock holder writes, so no read-modify-write.
  void flip(std::size_t slot) noexcept {
    std::atomic<std::uint64_t>& word = words_[slot / 64];
    word.store(word.load(std::memory_order_relaxed) ^ (std::uint64_t{1} << (slot % 64)),
               std::memory_order_relaxed);
  }

  std::array<std::atomic<std::uint64_t>, slots / 64> words_{};
  std::array<std::uint32_t, slots> counts_{};  // samples per slot (fewer than 2^32 live)
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_SAMPLE_FILTER_HPP
