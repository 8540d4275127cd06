// An open-addressing hash table from block address to a record: the side table
// of the tracking adaptor, kept outside the blocks it describes.
//
// Linear probing over a power-of-two array of slots, at most half full;
// deletion shifts the following entries back, so there are no tombstones and
// lookups stay short after any mix of inserts and erases. Address 0 marks an
// empty slot, so it cannot be a key. Not thread-safe: its owner locks.
#ifndef STRATA_ADDRESS_TABLE_HPP
#define STRATA_ADDRESS_TABLE_HPP

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace strata {

template <class Value>
class address_table {
 public:
  struct slot {
    std::uintptr_t key;
    Value value;
  };

  explicit address_table(std::size_t initial_capacity = 1024)
      : capacity_(std::bit_ceil(initial_capacity < 16 ? std::size_t{16} : initial_capacity)),
        shift_(64 - std::countr_zero(capacity_)),
        slots_(std::make_unique<slot[]>(capacity_)) {}

  // Insert or replace the record of `key` (non-zero).
  void insert(std::uintptr_t key, const Value& value) {
    if ((size_ + 1) * 2 > capacity_) [[unlikely]]
      grow();
    std::size_t i = home(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & (capacity_ - 1);
    size_ += slots_[i].key == 0;
    slots_[i] = {key, value};
  }

  // Remove the record of `key` into `out`; false when there is none.
  bool erase(std::uintptr_t key, Value& out) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return false;
      i = (i + 1) & (capacity_ - 1);
    }
    out = std::move(slots_[i].value);
    // Shift back each following entry that may live at or before the hole.
    for (std::size_t j = (i + 1) & (capacity_ - 1); slots_[j].key != 0;
         j = (j + 1) & (capacity_ - 1)) {
      const std::size_t wanted = home(slots_[j].key);
      if (((j - wanted) & (capacity_ - 1)) >= ((j - i) & (capacity_ - 1))) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i].key = 0;
    --size_;
    return true;
  }

  // Call `f(key, value)` for every record.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != 0) f(slots_[i].key, slots_[i].value);
  }

  std::size_t size() const noexcept { return size_; }

 private:
  // Fibonacci hashing: the high bits of key * 2^64 / phi.
  std::size_t home(std::uintptr_t key) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ull) >>
                                    shift_);
  }

  // Double the slots and insert every record again.
  [[gnu::cold, gnu::noinline]] void grow() {
    address_table bigger(capacity_ * 2);
    for_each([&](std::uintptr_t key, const Value& value) { bigger.insert(key, value); });
    *this = std::move(bigger);
  }

  std::size_t capacity_;
  int shift_;
  std::unique_ptr<slot[]> slots_;
  std::size_t size_ = 0;
};

}  // namespace strata

#endif  // STRATA_ADDRESS_TABLE_HPP
