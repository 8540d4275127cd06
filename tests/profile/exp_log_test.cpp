// The samplers' own logarithm and exp(x) - 1 (detail/exp_log.hpp) against the C
// math library's, over the arguments they take and beyond: within 2 ulps.
#include <strata/detail/exp_log.hpp>

#include <cmath>
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

namespace {

using strata::detail::exp_minus_one;
using strata::detail::natural_log;

constexpr double ulp = 0x1p-52;

// |got - want| relative to |want|.
double relative_error(double got, double want) {
  return std::fabs(got - want) / std::fabs(want);
}

// A double in [2^-k, 2^-k+1) for a k from `low_power` to `low_power + powers - 1`.
double random_magnitude(std::mt19937_64& random, int low_power, int powers) {
  double mantissa = 1.0 + static_cast<double>(random() >> 11) * 0x1p-53;
  return std::ldexp(mantissa, low_power + static_cast<int>(random() % powers));
}

TEST(ExpLog, NaturalLogMatchesTheMathLibrary) {
  EXPECT_EQ(natural_log(1.0), 0.0);
  EXPECT_LE(relative_error(natural_log(0x1p-53), std::log(0x1p-53)), 2 * ulp);
  std::mt19937_64 random(35);
  for (int i = 0; i < 200'000; ++i) {
    // The sampler's uniform draw in (0, 1], then magnitudes far either side of 1.
    double u = static_cast<double>((random() >> 11) + 1) * 0x1p-53;
    double x = random_magnitude(random, -1000, 2000);
    if (u != 1.0) {
      ASSERT_LE(relative_error(natural_log(u), std::log(u)), 2 * ulp) << u;
    }
    if (x != 1.0) {
      ASSERT_LE(relative_error(natural_log(x), std::log(x)), 2 * ulp) << x;
    }
  }
}

TEST(ExpLog, ExpMinusOneMatchesTheMathLibrary) {
  EXPECT_EQ(exp_minus_one(0.0), 0.0);
  EXPECT_EQ(exp_minus_one(-50.0), -1.0);
  std::mt19937_64 random(35);
  for (int i = 0; i < 200'000; ++i) {
    // -size / mean from a byte to far past the mean, and positive arguments too.
    double x = random_magnitude(random, -60, 68);
    if (x > 700) continue;
    ASSERT_LE(relative_error(exp_minus_one(-x), std::expm1(-x)), 2 * ulp) << -x;
    ASSERT_LE(relative_error(exp_minus_one(x), std::expm1(x)), 2 * ulp) << x;
  }
}

}  // namespace
