#include "managed_memory.hpp"

#include <strata/gpu/error.hpp>

#include <cstdlib>
#include <limits>
#include <string>

namespace strata::gpu::simulated {

namespace {

// Residency bits.
constexpr std::uint8_t on_host = 1;
constexpr std::uint8_t on_device = 2;

// Hint bits, set by advise.
constexpr std::uint8_t read_mostly = 1;
constexpr std::uint8_t preferred_host = 2;
constexpr std::uint8_t preferred_device = 4;
constexpr std::uint8_t accessed_by_host = 8;
constexpr std::uint8_t accessed_by_device = 16;

std::uint8_t bit(memory_location side) {
  return side == memory_location::host ? on_host : on_device;
}

std::uint8_t accessed_by(memory_location side) {
  return side == memory_location::host ? accessed_by_host : accessed_by_device;
}

}  // namespace

managed_memory::managed_memory(managed_model model) : model_(model) {
  if (model.page_bytes == 0 || (model.page_bytes & (model.page_bytes - 1)) != 0)
    throw device_error(errc::invalid_argument, "managed page size must be a power of two");
}

// Whatever the program did not free goes with the device.
managed_memory::~managed_memory() {
  for (auto& [start, a] : allocations_) std::free(reinterpret_cast<void*>(start));
}

// Whole pages, aligned to the page, so every page belongs to one allocation.
void* managed_memory::allocate(std::size_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max() - model_.page_bytes) return nullptr;
  const std::size_t pages = (bytes + model_.page_bytes - 1) / model_.page_bytes;
  void* p = std::aligned_alloc(model_.page_bytes, pages * model_.page_bytes);
  if (p == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  allocations_.emplace(reinterpret_cast<std::uintptr_t>(p),
                       allocation{bytes, std::vector<page>(pages)});
  return p;
}

// Only allocation starts are accepted.
bool managed_memory::release(void* p) {
  {
    std::lock_guard lock(mutex_);
    if (allocations_.erase(reinterpret_cast<std::uintptr_t>(p)) == 0) return false;
  }
  std::free(p);
  return true;
}

std::size_t managed_memory::size_of(const void* p) {
  std::lock_guard lock(mutex_);
  const auto it = allocations_.find(reinterpret_cast<std::uintptr_t>(p));
  return it == allocations_.end() ? 0 : it->second.pages.size() * model_.page_bytes;
}

bool managed_memory::contains(const void* p, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  return pages_of(p, bytes).first != nullptr;
}

// The allocation at or below p, then the page range, if the whole range fits in it.
std::pair<managed_memory::page*, managed_memory::page*> managed_memory::pages_of(
    const void* p, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return {nullptr, nullptr};
  --it;
  const std::uintptr_t offset = address - it->first;
  const std::size_t span = it->second.pages.size() * model_.page_bytes;
  if (offset >= span || bytes > span - offset) return {nullptr, nullptr};
  const std::size_t first = offset / model_.page_bytes;
  const std::size_t last = bytes == 0 ? first : (offset + bytes - 1) / model_.page_bytes;
  page* pages = it->second.pages.data();
  return {pages + first, pages + last + 1};
}

// One page touched from `side`: already there, reached remotely, populated, or moved.
std::chrono::nanoseconds managed_memory::touch_page(page& pg, memory_location side, bool write) {
  const std::uint8_t here = bit(side);
  if ((pg.resident & here) != 0) {
    if (write) pg.resident = here;  // the other side's read-only copy is dropped
    return {};
  }
  const bool remote = (pg.hints & accessed_by(side)) != 0 ||
                      (side == memory_location::device && (pg.hints & preferred_host) != 0);
  if (pg.resident != 0 && remote) {
    ++stats_.remote_accesses;
    return {};
  }
  const bool fresh = pg.resident == 0;
  pg.resident = (pg.hints & read_mostly) != 0 && !write ? pg.resident | here : here;
  if (fresh && side == memory_location::host) return {};  // an ordinary host page fault
  ++(side == memory_location::host ? stats_.faulted_to_host : stats_.faulted_to_device);
  stats_.charged += model_.fault_migration;
  return model_.fault_migration;
}

// Each page of the range in turn; memory that is not managed costs nothing.
std::chrono::nanoseconds managed_memory::touch(const void* p, std::size_t bytes,
                                               memory_location side, bool write) {
  std::lock_guard lock(mutex_);
  auto [first, last] = pages_of(p, bytes);
  std::chrono::nanoseconds cost{};
  for (page* pg = first; pg != last; ++pg) cost += touch_page(*pg, side, write);
  return cost;
}

// Pages not yet at `to` move there (read-mostly pages gain a copy).
std::chrono::nanoseconds managed_memory::prefetch(const void* p, std::size_t bytes,
                                                  memory_location to) {
  std::lock_guard lock(mutex_);
  auto [first, last] = pages_of(p, bytes);
  if (first == nullptr)
    throw device_error(errc::invalid_argument,
                       "prefetch_async of memory not from allocate_managed");
  const std::uint8_t there = bit(to);
  std::chrono::nanoseconds cost{};
  for (page* pg = first; pg != last; ++pg) {
    if ((pg->resident & there) != 0) continue;
    pg->resident = (pg->hints & read_mostly) != 0 ? pg->resident | there : there;
    ++(to == memory_location::host ? stats_.prefetched_to_host : stats_.prefetched_to_device);
    cost += model_.prefetch_migration;
  }
  stats_.charged += cost;
  return cost;
}

// Set or clear one hint on every page of the range.
void managed_memory::advise(const void* p, std::size_t bytes, memory_advice advice,
                            memory_location where) {
  std::uint8_t set = 0;
  std::uint8_t clear = 0;
  switch (advice) {
    case memory_advice::set_read_mostly:
      set = read_mostly;
      break;
    case memory_advice::unset_read_mostly:
      clear = read_mostly;
      break;
    case memory_advice::set_preferred_location:
      set = where == memory_location::host ? preferred_host : preferred_device;
      clear = preferred_host | preferred_device;
      break;
    case memory_advice::unset_preferred_location:
      clear = preferred_host | preferred_device;
      break;
    case memory_advice::set_accessed_by:
      set = accessed_by(where);
      break;
    case memory_advice::unset_accessed_by:
      clear = accessed_by(where);
      break;
  }
  std::lock_guard lock(mutex_);
  auto [first, last] = pages_of(p, bytes);
  if (first == nullptr)
    throw device_error(errc::invalid_argument, "advise of memory not from allocate_managed");
  for (page* pg = first; pg != last; ++pg) {
    pg->hints = static_cast<std::uint8_t>((pg->hints & ~clear) | set);
    // Without read-mostly a page keeps one copy: the device's, as the last mover.
    if (clear == read_mostly && pg->resident == (on_host | on_device)) pg->resident = on_device;
  }
}

residency managed_memory::at(const void* p) {
  std::lock_guard lock(mutex_);
  auto [first, last] = pages_of(p, 1);
  return first == nullptr ? residency::none : static_cast<residency>(first->resident);
}

managed_statistics managed_memory::statistics() {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace strata::gpu::simulated
