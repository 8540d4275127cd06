#include "sample_statistics.hpp"

#include <algorithm>
#include <numeric>

namespace strata_bench {

double quantile_of_sorted(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0.0;
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] * (1.0 - weight) + sorted[above] * weight;
}

distribution_summary summarize(std::vector<double> samples) {
  distribution_summary summary;
  if (samples.empty()) return summary;
  std::sort(samples.begin(), samples.end());
  summary.count = static_cast<long long>(samples.size());
  summary.min = samples.front();
  summary.max = samples.back();
  summary.mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  summary.p50 = quantile_of_sorted(samples, 0.50);
  summary.p90 = quantile_of_sorted(samples, 0.90);
  summary.p99 = quantile_of_sorted(samples, 0.99);
  summary.p999 = quantile_of_sorted(samples, 0.999);
  for (int percent = 0; percent <= 100; ++percent) {
    summary.quantiles.push_back(quantile_of_sorted(samples, percent / 100.0));
  }
  return summary;
}

}  // namespace strata_bench
