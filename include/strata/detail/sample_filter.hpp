// Which addresses may be live samples of the tracking adaptor's sampled mode,
// read without a lock on every free, so a block never drawn costs a load or
// two. An address hashes to one of 4096 slots, each counting the live samples
// there; a summary bit per eight slots (512 bits, one cache line) says
// whether any of them counts one. A free reads the summary, which stays in L1
// while the program streams through its blocks (a single level of 4096 bits
// missed L1 on half the frees), and the slot's count only when the summary bit
// is set. A record or forget writes one count and maybe the summary: with the
// bits and the counts apart, each touched two cold lines besides the summary.
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
    if (!summary_bit(slot)) [[likely]]
      return false;
    return counts_[slot].load(std::memory_order_relaxed) != 0;
  }

  // A sample now lives at `p`. The caller holds the sample table's lock.
  void add(const void* p) noexcept {
    const std::size_t slot = slot_of(p);
    const std::uint16_t count = counts_[slot].load(std::memory_order_relaxed);
    if (count == sticky) return;
    counts_[slot].store(count + 1, std::memory_order_relaxed);
    if (count == 0) set_summary_bit(slot, true);
  }

  // The sample at `p` is gone. The caller holds the sample table's lock.
  void remove(const void* p) noexcept {
    const std::size_t slot = slot_of(p);
    const std::uint16_t count = counts_[slot].load(std::memory_order_relaxed);
    if (count == sticky) return;
    counts_[slot].store(count - 1, std::memory_order_relaxed);
    if (count == 1 && group_empty(slot)) set_summary_bit(slot, false);
  }

 private:
  static constexpr int slot_bits = 12;
  static constexpr std::size_t slots = std::size_t{1} << slot_bits;
  static constexpr std::size_t slots_per_bit = 8;
  // A count that reached this stays (a slot of 65,535 live samples only costs
  // its frees a look at the table).
  static constexpr std::uint16_t sticky = 0xffff;

  // The slot of address `p`: Fibonacci hashing, so nearby blocks spread.
  static std::size_t slot_of(const void* p) noexcept {
    return static_cast<std::size_t>(
        (static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)) * 0x9e3779b97f4a7c15ull) >>
        (64 - slot_bits));
  }

  // The summary bit over `slot`.
  bool summary_bit(std::size_t slot) const noexcept {
    const std::size_t bit = slot / slots_per_bit;
    return (summary_[bit / 64].load(std::memory_order_relaxed) >> (bit % 64) & 1) != 0;
  }

  // Set or clear the summary bit over `slot`: only the lock holder writes, so
  // no read-modify-write.
  void set_summary_bit(std::size_t slot, bool on) noexcept {
    const std::size_t bit = slot / slots_per_bit;
    std::atomic<std::uint64_t>& word = summary_[bit / 64];
    const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
    const std::uint64_t old = word.load(std::memory_order_relaxed);
    word.store(on ? old | mask : old & ~mask, std::memory_order_relaxed);
  }

  // Whether every slot under `slot`'s summary bit counts no sample.
  bool group_empty(std::size_t slot) const noexcept {
    const std::size_t first = slot / slots_per_bit * slots_per_bit;
    for (std::size_t i = first; i < first + slots_per_bit; ++i)
      if (counts_[i].load(std::memory_order_relaxed) != 0) return false;
    return true;
  }

  alignas(64) std::array<std::atomic<std::uint64_t>, slots / slots_per_bit / 64> summary_{};
  std::array<std::atomic<std::uint16_t>, slots> counts_{};
};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_SAMPLE_FILTER_HPP
