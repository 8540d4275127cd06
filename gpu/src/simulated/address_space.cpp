#include "address_space.hpp"

#include <strata/gpu/error.hpp>

#include <sys/mman.h>

#include <iterator>
#include <string>

namespace strata::gpu::simulated {

// PROT_NONE and MAP_NORESERVE: the range costs address space only, never memory.
address_space::address_space(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw device_error(errc::backend,
                       "cannot reserve " + std::to_string(bytes) + " bytes of address space");
  base_ = reinterpret_cast<std::uintptr_t>(p);
  free_.emplace(base_, bytes);
}

address_space::~address_space() {
  if (base_ != 0) ::munmap(reinterpret_cast<void*>(base_), size_);
}

// First fit keeps low addresses busy and large ranges whole at the top.
void* address_space::take(std::size_t bytes) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const std::uintptr_t start = it->first;
    const std::size_t rest = it->second - bytes;
    free_.erase(it);
    if (rest != 0) free_.emplace(start + bytes, rest);
    return reinterpret_cast<void*>(start);
  }
  return nullptr;
}

// Merge with both neighbours so freed space is whole again for large requests.
void address_space::give_back(void* p, std::size_t bytes) {
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(p);
  auto next = free_.lower_bound(start);
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      start = previous->first;
      bytes += previous->second;
      free_.erase(previous);
    }
  }
  if (next != free_.end() && start + bytes == next->first) {
    bytes += next->second;
    free_.erase(next);
  }
  free_.emplace(start, bytes);
}

// Copies use this to skip memory that has no bytes behind it.
bool address_space::contains(const void* p) const noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  return address >= base_ && address - base_ < size_;
}

}  // namespace strata::gpu::simulated
