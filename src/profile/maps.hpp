// The process's file mappings from /proc/self/maps, recorded in a profile so
// its addresses can be symbolised offline against the same files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::profile {

struct mapping {
  std::uintptr_t start;
  std::uintptr_t limit;
  std::uint64_t offset;  // into the file
  const char* path;      // into the text read
  std::size_t path_length;
};

// Read the executable file mappings into `out` (at most `capacity`), their
// paths pointing into `text` (`text_capacity` bytes); how many were found.
std::size_t read_mappings(mapping* out, std::size_t capacity, char* text,
                          std::size_t text_capacity) noexcept;

}  // namespace strata::profile
