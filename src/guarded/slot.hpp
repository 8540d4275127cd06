// One slot of the guarded region: what it holds and the history a fault
// report tells (who allocated the block, who freed it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "stack/frames.hpp"

namespace strata::guarded {

enum class slot_state : std::uint8_t { unused, live, freed };

struct slot {
  std::atomic<slot_state> state{slot_state::unused};
  std::uintptr_t block = 0;  // the block's start while live or freed
  std::size_t size = 0;      // bytes asked for
  std::uint32_t alloc_thread = 0;
  std::uint32_t free_thread = 0;
  stack::frames alloc_stack;
  stack::frames free_stack;
};

// Where an address of the region falls: in a slot's memory, or in the guard
// page between `before` and `after` (either null at the region's ends).
struct location {
  const slot* inside = nullptr;
  const slot* before = nullptr;
  const slot* after = nullptr;
};

// Which slot an address of the region falls in or beside; false outside the region.
bool locate(std::uintptr_t address, location& out) noexcept;
// The slot's index, for reports.
std::size_t index_of(const slot* s) noexcept;

}  // namespace strata::guarded
