// Human-readable byte counts for metric labels: "64 B", "4 KB", "1 MB".
#pragma once

#include <cstddef>
#include <string>

namespace strata_bench {

// Formats a byte count with the largest binary unit that divides it exactly.
inline std::string size_label(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KB";
  return std::to_string(bytes) + " B";
}

}  // namespace strata_bench
