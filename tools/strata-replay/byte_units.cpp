#include "byte_units.hpp"

#include <cstdio>
#include <cstdlib>

namespace strata_replay {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

// The number, then a unit from the table; a fraction ("1.5GiB") is allowed.
std::optional<std::uint64_t> parse_bytes(const std::string& text) {
  struct unit {
    const char* name;
    double factor;
  };
  const unit units[] = {{"", 1.0},       {"B", 1.0},      {"K", 0x1p10},   {"M", 0x1p20},
                        {"G", 0x1p30},   {"T", 0x1p40},   {"KiB", 0x1p10}, {"MiB", 0x1p20},
                        {"GiB", 0x1p30}, {"TiB", 0x1p40}, {"KB", 1e3},     {"MB", 1e6},
                        {"GB", 1e9},     {"TB", 1e12}};
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(number >= 0)) return std::nullopt;
  const std::string suffix(end);
  for (const unit& u : units) {
    if (suffix != u.name) continue;
    const double bytes = number * u.factor;
    if (bytes >= 0x1p64) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
  }
  return std::nullopt;
}

}  // namespace strata_replay
