// Timestamps for benchmarks: a serialised cycle counter for single operations and the
// monotonic clock for longer intervals.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace strata_bench {

// Reads the time-stamp counter between two lfences, so the measured operation can
// neither start before nor finish after the reading; nanoseconds where no TSC exists.
inline std::uint64_t cycle_stamp() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_lfence();
  std::uint64_t ticks = __rdtsc();
  _mm_lfence();
  return ticks;
#else
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000u + now.tv_nsec;
#endif
}

// Nanoseconds on the monotonic clock.
inline double monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

// The cycle counter's rate and the cost of one empty measurement, found once per process.
struct cycle_calibration {
  double ns_per_tick = 1.0;
  double empty_measurement_ns = 0.0;
};

// Measures the counter against the monotonic clock and the median empty measurement.
cycle_calibration calibrate_cycle_clock();

// The calibration of this process (computed on first use).
const cycle_calibration& cycle_clock();

// Converts a tick difference to nanoseconds, less the empty-measurement cost (never below 0).
inline double ticks_to_ns(std::uint64_t ticks) {
  double ns =
      static_cast<double>(ticks) * cycle_clock().ns_per_tick - cycle_clock().empty_measurement_ns;
  return ns > 0.0 ? ns : 0.0;
}

}  // namespace strata_bench
