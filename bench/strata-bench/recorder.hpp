// What one scenario measured in one process: metrics (one value per repetition),
// latency distributions (many samples) and facts (checks and counts). A scenario that
// compares strategies (a session heap against std::pmr resources, say) names the
// strategy of each metric and distribution; the report gives each strategy a column.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "json_writer.hpp"

namespace strata_bench {

enum class better { lower, higher };

// One labelled quantity measured once per repetition. `series` and `x` place it on a
// line plot (for example series "64 B", x = thread count); x is 0 when not on one.
struct metric_series {
  std::string strategy;  // empty in a scenario whose columns are allocators
  std::string label;
  std::string unit;
  better direction = better::lower;
  std::string series;
  double x = 0;
  std::vector<double> values;
};

// Per-operation samples of one labelled latency, in nanoseconds.
struct latency_samples {
  std::string strategy;
  std::string label;
  std::vector<double> samples_ns;
};

class recorder {
 public:
  // Adds one repetition's value to the metric with this label (created on first use).
  void add(const std::string& label, const std::string& unit, double value,
           better direction = better::lower);
  // As add(), for a point on a line plot.
  void add_point(const std::string& series, double x, const std::string& label,
                 const std::string& unit, double value, better direction = better::lower);
  // The sample vector of the latency distribution with this label (created on first use).
  std::vector<double>& latency(const std::string& label);
  // As add() and latency(), for one strategy of a scenario that compares strategies.
  void add_for(const std::string& strategy, const std::string& label, const std::string& unit,
               double value, better direction = better::lower);
  std::vector<double>& latency_for(const std::string& strategy, const std::string& label);
  void add_point_for(const std::string& strategy, const std::string& series, double x,
                     const std::string& label, const std::string& unit, double value);
  // Records a check or a count; the last value for a key wins.
  void fact(const std::string& key, std::variant<double, std::string, bool> value);

  // Writes "metrics", "distributions" and "facts" members into the current JSON object.
  void write_members(json_writer& out) const;

 private:
  metric_series& series_for(const std::string& strategy, const std::string& label);

  std::vector<metric_series> metrics_;
  std::deque<latency_samples> latencies_;  // deque: references stay valid as it grows
  std::map<std::string, std::variant<double, std::string, bool>> facts_;
};

}  // namespace strata_bench
