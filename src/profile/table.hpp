// The profiler's memory: live samples keyed by address, and their stacks
// gathered in buckets that sum what each stack allocated and still holds.
// Both tables are fixed-size and mapped at start, so recording a sample never
// allocates; one lock guards them (the sampled path is rare by design).
#pragma once

#include <strata/detail/poisson_sampler.hpp>

#include <cstddef>
#include <cstdint>

#include "stack/frames.hpp"

namespace strata::profile {

// What one sample stands for: 1/p blocks and size/p bytes (poisson_weight).
using weight = detail::sample_weight;

// One distinct allocation stack and the estimated blocks and bytes drawn
// there since start and still live.
struct bucket {
  std::uint64_t hash;
  stack::frames stack;
  weight allocated;
  weight live;
};

// Map the tables; false when they cannot be mapped.
bool table_start() noexcept;

// Remember the block at `address` (`size` bytes, worth `w`) drawn at `stack`
// by kernel thread `thread`; false when the table is full.
bool table_insert(std::uintptr_t address, std::size_t size, weight w, const stack::frames& stack,
                  std::uint32_t thread) noexcept;

// Forget the live sample at `address`, its bytes subtracted from its bucket:
// its size (and in `thread` the thread that allocated it), or 0 when `address`
// is no live sample.
std::size_t table_erase(std::uintptr_t address, std::uint32_t* thread) noexcept;

// The size of the live sample at `address`, or 0.
std::size_t table_size(std::uintptr_t address) noexcept;

// The buckets in use, with the lock held until table_unlock: what a dump reads.
const bucket* table_lock(std::size_t* count) noexcept;
void table_unlock() noexcept;

// Whether the calling thread holds the lock (a signal arriving inside the
// sampler must not dump).
bool table_held_here() noexcept;

// fork: the lock taken before, released in both processes after.
void table_fork_prepare() noexcept;
void table_fork_after() noexcept;

}  // namespace strata::profile
