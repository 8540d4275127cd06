// An open-addressing hash table from block address to a record: the side table
// of the tracking adaptor, kept outside the blocks it describes.
//
// Linear probing over a power-of-two array of slots, at most half full;
// deletion shifts the following entries back, so there are no tombstones and
// lookups stay short after any mix of inserts and erases. Keys and values are
// two parallel arrays: a probe reads only the keys (8 bytes a slot, so the
// array stays in cache while the program streams through its own memory), and
// an erase that does not ask for the value never touches it. Address 0 marks
// an empty slot, so it cannot be a key. Not thread-safe: its owner locks.
#ifndef STRATA_ADDRESS_TABLE_HPP
#define STRATA_ADDRESS_TABLE_HPP

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>

namespace strata {

template <class Value>
class address_table {
 public:
  explicit address_table(std::size_t initial_capacity = 1024)
      : capacity_(std::bit_ceil(initial_capacity < 16 ? std::size_t{16} : initial_capacity)),
        shift_(64 - std::countr_zero(capacity_)),
        keys_(std::make_unique<std::uintptr_t[]>(capacity_)),
        values_(std::make_unique<Value[]>(capacity_)) {}

  // Insert or replace the record of `key`; key 0 (the empty slot's mark) throws
  // std::invalid_argument, as it would be lost and miscount the table.
  void insert(std::uintptr_t key, const Value& value) {
    if (key == 0) [[unlikely]]
      throw std::invalid_argument("strata: address_table::insert: key 0 is the empty slot's");
    if ((size_ + 1) * 2 > capacity_) [[unlikely]]
      grow();
    std::size_t i = home(key);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & (capacity_ - 1);
    size_ += keys_[i] == 0;
    keys_[i] = key;
    values_[i] = value;
  }

  // Remove the record of `key`, moving it into *out unless out is null; false
  // when there is none (key 0 never has one: it would match an empty slot).
  bool erase(std::uintptr_t key, Value* out) noexcept {
    if (key == 0) [[unlikely]]
      return false;
    std::size_t i = home(key);
    while (keys_[i] != key) {
      if (keys_[i] == 0) return false;
      i = (i + 1) & (capacity_ - 1);
    }
    if (out != nullptr) *out = std::move(values_[i]);
    // Shift back each following entry that may live at or before the hole.
    for (std::size_t j = (i + 1) & (capacity_ - 1); keys_[j] != 0; j = (j + 1) & (capacity_ - 1)) {
      const std::size_t wanted = home(keys_[j]);
      if (((j - wanted) & (capacity_ - 1)) >= ((j - i) & (capacity_ - 1))) {
        keys_[i] = keys_[j];
        values_[i] = std::move(values_[j]);
        i = j;
      }
    }
    keys_[i] = 0;
    --size_;
    return true;
  }

  // Call `f(key, value)` for every record.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (keys_[i] != 0) f(keys_[i], values_[i]);
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
  std::unique_ptr<std::uintptr_t[]> keys_;
  std::unique_ptr<Value[]> values_;
  std::size_t size_ = 0;
};

}  // namespace strata

#endif  // STRATA_ADDRESS_TABLE_HPP
