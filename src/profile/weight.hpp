// What one sample stands for. Sample points fall on the stream of allocated
// bytes as a Poisson process of mean spacing `rate`, so a block of `size`
// bytes holds at least one (and is drawn) with probability
// p = 1 - exp(-size / rate); counting it as 1/p blocks and size/p bytes makes
// the expected estimate of every site exactly what it allocated.
#pragma once

#include <cmath>
#include <cstddef>

namespace strata::profile {

struct weight {
  double count;
  double bytes;
};

inline weight weight_of(std::size_t size, double rate) noexcept {
  if (size == 0) return {0, 0};
  double drawn = -std::expm1(-static_cast<double>(size) / rate);
  return {1 / drawn, static_cast<double>(size) / drawn};
}

}  // namespace strata::profile
