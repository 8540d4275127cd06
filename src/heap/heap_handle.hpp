// The handles the C API gives out for heaps: the heap's address with a
// generation in the top 16 bits, which no user-space address uses. The heap
// keeps its handle and forgets it when it goes, so a handle of a destroyed
// heap (even one remade at the same address) or a pointer that is no handle
// is refused by one load and one compare.
#pragma once

#include <cstdint>

#include "heap/heap.hpp"

namespace strata::heap {

inline constexpr unsigned handle_generation_shift = 48;
inline constexpr std::uintptr_t handle_address_mask =
    (std::uintptr_t{1} << handle_generation_shift) - 1;

// Give `h` a handle of a generation no live heap at its address has had lately.
void heap_issue_handle(heap* h) noexcept;

// Forget `h`'s handle as the heap goes, keeping its address (no generation):
// a later call with the old handle is told the heap was destroyed. Volatile:
// the store comes just before the heap's lifetime ends, where the compiler
// would otherwise drop it.
inline void heap_forget_handle(heap* h) noexcept {
  *static_cast<volatile std::uintptr_t*>(&h->handle) = reinterpret_cast<std::uintptr_t>(h);
}

// The heap a handle names, not yet validated.
inline heap* heap_of_handle(std::uintptr_t handle) noexcept {
  return reinterpret_cast<heap*>(handle & handle_address_mask);
}

// Whether `handle` carries a generation: a plain pointer is no handle.
inline bool looks_like_handle(std::uintptr_t handle) noexcept {
  return (handle >> handle_generation_shift) != 0;
}

}  // namespace strata::heap
