// Order statistics of a set of measurements.
#pragma once

#include <vector>

namespace strata_bench {

// Summary of a latency distribution: percentiles plus the quantile curve for CDF plots.
struct distribution_summary {
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  long long count = 0;
  std::vector<double> quantiles;  // value at 0%, 1%, ..., 100% (101 points)
};

// The value below which `fraction` of the sorted samples lie (linear interpolation).
double quantile_of_sorted(const std::vector<double>& sorted, double fraction);

// Sorts the samples and summarises them.
distribution_summary summarize(std::vector<double> samples);

}  // namespace strata_bench
