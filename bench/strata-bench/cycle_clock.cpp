#include "cycle_clock.hpp"

#include <algorithm>
#include <array>

namespace strata_bench {

cycle_calibration calibrate_cycle_clock() {
  cycle_calibration result;
  const double start_ns = monotonic_ns();
  const std::uint64_t start_ticks = cycle_stamp();
  while (monotonic_ns() - start_ns < 20e6) {
  }
  const double elapsed_ns = monotonic_ns() - start_ns;
  const std::uint64_t elapsed_ticks = cycle_stamp() - start_ticks;
  result.ns_per_tick = elapsed_ns / static_cast<double>(elapsed_ticks);

  std::array<std::uint64_t, 1001> empty{};
  for (auto& ticks : empty) {
    const std::uint64_t before = cycle_stamp();
    ticks = cycle_stamp() - before;
  }
  std::nth_element(empty.begin(), empty.begin() + empty.size() / 2, empty.end());
  result.empty_measurement_ns = static_cast<double>(empty[empty.size() / 2]) * result.ns_per_tick;
  return result;
}

const cycle_calibration& cycle_clock() {
  static const cycle_calibration calibration = calibrate_cycle_clock();
  return calibration;
}

}  // namespace strata_bench
