// Byte counts as people write them: printed in the largest binary unit, and
// read from "80GiB", "512M", "40GB" or a plain number of bytes.
#ifndef STRATA_REPLAY_BYTE_UNITS_HPP
#define STRATA_REPLAY_BYTE_UNITS_HPP

#include <cstdint>
#include <optional>
#include <string>

namespace strata_replay {

// Bytes in the largest binary unit that keeps the number above 1 ("1.5 GiB").
std::string human_bytes(double bytes);

// A size with an optional unit: B; K, M, G, T, KiB ... TiB (binary); KB ...
// TB (decimal). None for anything else or an overflow.
std::optional<std::uint64_t> parse_bytes(const std::string& text);

}  // namespace strata_replay

#endif  // STRATA_REPLAY_BYTE_UNITS_HPP
