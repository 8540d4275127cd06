// Sampling by bytes, as tcmalloc and jemalloc profile: sample points fall on
// the stream of allocated bytes as a Poisson process of mean spacing `mean`,
// so the gap to the next one is exponential and a block of `size` bytes is
// drawn with probability p = 1 - exp(-size / mean). Counting a drawn block as
// 1/p blocks and size/p bytes makes every estimate unbiased. One algorithm for
// the heap profiler (src/profile) and the tracking adaptor's sampled mode.
#ifndef STRATA_DETAIL_POISSON_SAMPLER_HPP
#define STRATA_DETAIL_POISSON_SAMPLER_HPP

#include <climits>
#include <cstddef>
#include <cstdint>

#include <strata/detail/exp_log.hpp>

namespace strata::detail {

// Spread a seed (splitmix's finaliser, so nearby seeds give unrelated
// streams) into a non-zero xorshift state.
inline std::uint64_t sampler_state(std::uint64_t seed) noexcept {
  seed = (seed ^ (seed >> 31)) * 0xbf58476d1ce4e5b9;
  return (seed ^ (seed >> 29)) | 1;
}

// The next 64 random bits of `state` (xorshift: no lock, no system call).
inline std::uint64_t sampler_next(std::uint64_t& state) noexcept {
  std::uint64_t x = state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return state = x;
}

// Bytes until the next sample: -mean * ln(u) for u uniform in (0, 1] made of
// 53 bits of `uniform`, never 0, LONG_MAX when out of reach.
inline long poisson_gap(std::uint64_t uniform, double mean) noexcept {
  const double u = static_cast<double>((uniform >> 11) + 1) * 0x1p-53;
  const double gap = -mean * natural_log(u);
  return gap < 1 ? 1 : gap > 0x1p62 ? LONG_MAX : static_cast<long>(gap);
}

// What one drawn block of `size` bytes stands for.
struct sample_weight {
  double count;
  double bytes;
};

// 1/p blocks and size/p bytes, p = 1 - exp(-size / mean); nothing for 0 bytes,
// which are never drawn.
inline sample_weight poisson_weight(std::size_t size, double mean) noexcept {
  if (size == 0) return {0, 0};
  const double drawn = -exp_minus_one(-static_cast<double>(size) / mean);
  return {1 / drawn, static_cast<double>(size) / drawn};
}

}  // namespace strata::detail

#endif  // STRATA_DETAIL_POISSON_SAMPLER_HPP
