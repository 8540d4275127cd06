// Guarded sampling (STRATA_GUARDED_SAMPLE_RATE): a sampled block lives alone in
// a slot of one reserved region, against an inaccessible guard page (after it,
// or before it for a share of the blocks), so an overflow or underflow faults
// at the first byte out; a freed slot is made inaccessible and waits in
// quarantine, so a use after free faults too. The region is bounded
// (STRATA_GUARDED_MAX_SLOTS) and its bookkeeping is mapped, never taken from
// the heap it guards.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::guarded {

// The largest block a slot holds: larger requests are never sampled.
inline constexpr std::size_t slot_bytes = std::size_t{16} << 10;

// Reserve the region of `max_slots` slots and install the fault handler; a
// share of `underflow_percent` blocks goes against the guard before them. The
// region takes whole units of `unit` bytes (the heap's segment size), so no
// segment shares a unit with it and free tells the two apart by the unit.
// False (and nothing changed) when the region cannot be reserved. Once only.
bool start(std::size_t max_slots, unsigned underflow_percent, std::size_t unit) noexcept;

// The region's bounds: [begin, end); both null before start().
extern std::atomic<std::uintptr_t> region_begin;
extern std::atomic<std::uintptr_t> region_end;

// Whether `p` is in the guarded region (a block of it, or not one of strata's).
inline bool owns(const void* p) noexcept {
  auto address = reinterpret_cast<std::uintptr_t>(p);
  return address - region_begin.load(std::memory_order_relaxed) <
         region_end.load(std::memory_order_relaxed) - region_begin.load(std::memory_order_relaxed);
}

// A block of `size` bytes aligned to `alignment` (a power of two, at most a
// page) in a slot of its own; null when the size or alignment does not fit a
// slot or every slot is live.
void* allocate(std::size_t size, std::size_t alignment) noexcept;

// Free a block of the region: its slot becomes inaccessible and joins the
// quarantine; the bytes it was asked for, and in `other_thread` whether
// another thread allocated it. A double free or a pointer that is no block's
// start is reported with the slot's history and aborts.
std::size_t release(void* p, bool* other_thread) noexcept;

// The address space the region takes (0 before start()).
inline std::size_t region_bytes() noexcept {
  return region_end.load(std::memory_order_relaxed) - region_begin.load(std::memory_order_relaxed);
}

// The usable bytes of a live block of the region (what was asked for, rounded
// up to 16 bytes as every strata block is); a
// pointer that is no live block's start is reported as release() does.
std::size_t usable_size(const void* p) noexcept;

}  // namespace strata::guarded
