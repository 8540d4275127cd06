// The simulated device's handles: streams, events and graphs are named by
// opaque values that, as CUDA's, are recycled: the handle of the object
// destroyed last is the next one handed out, so code that keys anything by a
// raw handle meets a new object under an old name at once.
#ifndef STRATA_GPU_SIMULATED_HANDLE_TABLE_HPP
#define STRATA_GPU_SIMULATED_HANDLE_TABLE_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata::gpu::simulated {

template <class Entry>
class handle_table {
 public:
  // Handles are `base` plus a multiple of 16: never null, never CUDA's special
  // stream handles (1 and 2), never dereferenced.
  explicit handle_table(std::uintptr_t base) : base_(base) {}

  // Keep `entry` under the most recently released handle, else a fresh one.
  void* add(std::unique_ptr<Entry> entry) {
    std::size_t slot;
    if (!released_.empty()) {
      slot = released_.back();
      released_.pop_back();
      slots_[slot] = std::move(entry);
    } else {
      slot = slots_.size();
      slots_.push_back(std::move(entry));
    }
    return reinterpret_cast<void*>(base_ + 16 * (slot + 1));
  }

  // The entry a handle names now, or null.
  Entry* find(const void* handle) const noexcept {
    const std::size_t slot = slot_of(handle);
    return slot < slots_.size() ? slots_[slot].get() : nullptr;
  }

  // Take the entry out; its handle goes to the front of the line for reuse.
  std::unique_ptr<Entry> remove(const void* handle) {
    const std::size_t slot = slot_of(handle);
    if (slot >= slots_.size() || !slots_[slot]) return nullptr;
    released_.push_back(slot);
    return std::move(slots_[slot]);
  }

  // Drop every entry (the device is going away).
  void clear() {
    slots_.clear();
    released_.clear();
  }

  // Every live entry, for walks over all streams or events.
  template <class Visit>
  void for_each(Visit visit) const {
    for (const auto& entry : slots_)
      if (entry) visit(*entry);
  }

 private:
  std::size_t slot_of(const void* handle) const noexcept {
    const auto value = reinterpret_cast<std::uintptr_t>(handle);
    if (value <= base_ || (value - base_) % 16 != 0) return static_cast<std::size_t>(-1);
    return (value - base_) / 16 - 1;
  }

  std::uintptr_t base_;
  std::vector<std::unique_ptr<Entry>> slots_;
  std::vector<std::size_t> released_;
};

}  // namespace strata::gpu::simulated

#endif
