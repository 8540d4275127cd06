// The sampled heap profiler (STRATA_PROFILE, STRATA_PROFILE_RATE): about one
// allocation per STRATA_PROFILE_RATE bytes allocated is drawn (a Poisson
// process over the bytes, so larger blocks are drawn more often and each
// sample's weight makes the estimate unbiased), placed in a mapping of its own (whole 32 MiB units
// of address space, only its own pages touched) and remembered with its stack until freed. Profiles
// of live and of allocated memory are written at exit, on strata_profile_dump and on a chosen
// signal. Nothing here allocates from the heap it profiles: tables are mapped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::profile {

// Read the STRATA_PROFILE* settings, map the tables and install the exit and
// signal hooks; false (and nothing changed) when profiling is off or the
// tables cannot be mapped. Sampled blocks take whole units of `unit` bytes
// (the heap's segment size), so free never mistakes one for a heap block.
// Once only.
bool start(std::size_t unit) noexcept;

// Bytes until the next sample, exponentially distributed with mean the rate,
// from `uniform` (64 random bits).
long next_gap(std::uint64_t uniform) noexcept;

// A block of `size` bytes (more than 0) in a mapping of its own, aligned to the unit, remembered as
// a sample with the caller's stack; null when it cannot be mapped or the table is full.
void* allocate(std::size_t size) noexcept;

// Forget and unmap a sampled block: the bytes it was asked for, or 0 when `p`
// is no live sample; `other_thread` tells whether another thread allocated it.
std::size_t release(void* p, bool* other_thread) noexcept;

// The address space a sampled block of `size` bytes takes: whole units.
std::size_t mapped_bytes(std::size_t size) noexcept;

// The usable bytes of a live sampled block, or 0 when `p` is none.
std::size_t usable_size(const void* p) noexcept;

}  // namespace strata::profile
