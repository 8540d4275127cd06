// What one sample stands for: the Poisson weight of
// include/strata/detail/poisson_sampler.hpp (1/p blocks and size/p bytes for a
// block drawn with probability p), so the profiler and the tracking adaptor
// estimate alike.
#pragma once

#include <strata/detail/poisson_sampler.hpp>

#include <cstddef>

namespace strata::profile {

using weight = detail::sample_weight;

// The weight of one drawn block of `size` bytes at `rate`.
inline weight weight_of(std::size_t size, double rate) noexcept {
  return detail::poisson_weight(size, rate);
}

}  // namespace strata::profile
