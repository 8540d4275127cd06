// The natural logarithm and exp(x) - 1, without the C math library: the
// heap's byte sampler needs them, and the libm a library pulls in costs every
// small process under the malloc override about 0.3 MB of resident pages
// (mapped at start, used only once profiling is on). Accurate to a few ulps.
#ifndef STRATA_DETAIL_EXP_LOG_HPP
#define STRATA_DETAIL_EXP_LOG_HPP

#include <bit>
#include <cstdint>

namespace strata::detail {

// ln 2 split so that k * ln2_high is exact for any exponent k (fdlibm's split).
inline constexpr double ln2_high = 6.93147180369123816490e-01;
inline constexpr double ln2_low = 1.90821492927058770002e-10;

// exp(r) - 1 for |r| <= 0.5 by its Taylor series to r^18 / 18! (the rest is
// below an ulp), nested as r (1 + r/2 (1 + r/3 (1 + ...))): no cancellation,
// so small r keeps its precision.
inline double expm1_near_zero(double r) noexcept {
  double sum = 1;
  for (int k = 18; k >= 2; --k) sum = 1 + sum * r * (1.0 / k);
  return r * sum;
}

// 2^k for -1022 <= k <= 1023, built from its bits.
inline double power_of_two(int k) noexcept {
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// exp(x) - 1 for x <= 700: the series near zero, else 2^k * exp(r) - 1
// with x = k ln 2 + r, |r| <= ln 2 / 2 (exp(x) - 1 is -1 to the last bit below -40).
inline double exp_minus_one(double x) noexcept {
  if (x > -0.5 && x < 0.5) return expm1_near_zero(x);
  if (x < -40) return -1;
  const double scaled = x * 1.44269504088896340736;  // x / ln 2
  const int k = static_cast<int>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
  const double r = (x - k * ln2_high) - k * ln2_low;
  return power_of_two(k) * (1 + expm1_near_zero(r)) - 1;
}

// ln(x) for a normal, finite x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its odd series
// (terms past s^25 are below an ulp).
inline double natural_log(double x) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  int exponent = static_cast<int>(bits >> 52) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffff) | 0x3ff0000000000000);
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    ++exponent;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double sum = 1.0 / 25;
  for (int k = 23; k >= 3; k -= 2) sum = sum * s2 + 1.0 / k;
  // sum is now 1/3 + s^2/5 + ...; ln m = 2s + 2s^3 * sum.
  return exponent * ln2_high + (2 * s + (2 * s * s2 * sum + exponent * ln2_low));
}

}  // namespace strata::detail

#endif  // STRATA_DETAIL_EXP_LOG_HPP
