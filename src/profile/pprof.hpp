// The profile in pprof's profile.proto format: one profile with four sample
// types (alloc_objects, alloc_space, inuse_objects, inuse_space; the last the
// default), one sample per stack, a location per distinct return address, the
// executable file mappings so the addresses can be symbolised offline.
#pragma once

#include <cstddef>
#include <cstdint>

#include "profile/maps.hpp"
#include "profile/proto.hpp"
#include "profile/table.hpp"

namespace strata::profile {

struct pprof_input {
  const bucket* buckets;
  std::size_t bucket_count;
  const mapping* mappings;
  std::size_t mapping_count;
  double rate;                   // the sampling period, in bytes
  std::uint64_t* address_slots;  // zeroed scratch, a power of two of them,
  std::size_t slot_count;        // at least twice the frames of all buckets
};

void write_pprof(sink& out, const pprof_input& in) noexcept;

// Frames are return addresses; a location names the call instruction (one
// byte before), as symbolisers expect.
inline std::uint64_t call_address(const void* return_address) noexcept {
  return reinterpret_cast<std::uintptr_t>(return_address) - 1;
}

}  // namespace strata::profile
