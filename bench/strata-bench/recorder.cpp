#include "recorder.hpp"

#include "sample_statistics.hpp"

namespace strata_bench {

// The metric of this strategy and label, appended the first time it is named.
metric_series& recorder::series_for(const std::string& strategy, const std::string& label) {
  for (auto& metric : metrics_) {
    if (metric.strategy == strategy && metric.label == label) return metric;
  }
  metrics_.push_back(metric_series{strategy, label, "", better::lower, "", 0, {}});
  return metrics_.back();
}

void recorder::add(const std::string& label, const std::string& unit, double value,
                   better direction) {
  add_for("", label, unit, value, direction);
}

void recorder::add_for(const std::string& strategy, const std::string& label,
                       const std::string& unit, double value, better direction) {
  metric_series& metric = series_for(strategy, label);
  metric.unit = unit;
  metric.direction = direction;
  metric.values.push_back(value);
}

void recorder::add_point(const std::string& series, double x, const std::string& label,
                         const std::string& unit, double value, better direction) {
  add(label, unit, value, direction);
  metric_series& metric = series_for("", label);
  metric.series = series;
  metric.x = x;
}

void recorder::add_point_for(const std::string& strategy, const std::string& series, double x,
                             const std::string& label, const std::string& unit, double value) {
  add_for(strategy, label, unit, value);
  metric_series& metric = series_for(strategy, label);
  metric.series = series;
  metric.x = x;
}

std::vector<double>& recorder::latency(const std::string& label) {
  return latency_for("", label);
}

std::vector<double>& recorder::latency_for(const std::string& strategy, const std::string& label) {
  for (auto& latency : latencies_) {
    if (latency.strategy == strategy && latency.label == label) return latency.samples_ns;
  }
  latencies_.push_back(latency_samples{strategy, label, {}});
  return latencies_.back().samples_ns;
}

// Writes the strategy member of a metric or distribution that has one.
static void write_strategy(json_writer& out, const std::string& strategy) {
  if (strategy.empty()) return;
  out.key("strategy");
  out.value(strategy);
}

void recorder::fact(const std::string& key, std::variant<double, std::string, bool> value) {
  facts_[key] = std::move(value);
}

// Writes the metrics with their raw per-repetition values.
static void write_metrics(json_writer& out, const std::vector<metric_series>& metrics) {
  out.key("metrics");
  out.begin_array();
  for (const auto& metric : metrics) {
    out.begin_object();
    write_strategy(out, metric.strategy);
    out.key("label");
    out.value(metric.label);
    out.key("unit");
    out.value(metric.unit);
    out.key("better");
    out.value(metric.direction == better::lower ? "lower" : "higher");
    if (!metric.series.empty()) {
      out.key("series");
      out.value(metric.series);
      out.key("x");
      out.value(metric.x);
    }
    out.key("values");
    out.begin_array();
    for (double value : metric.values) out.value(value);
    out.end_array();
    out.end_object();
  }
  out.end_array();
}

// Writes each latency distribution as percentiles plus its 101-point quantile curve.
static void write_distributions(json_writer& out, const std::deque<latency_samples>& latencies) {
  out.key("distributions");
  out.begin_array();
  for (const auto& latency : latencies) {
    const distribution_summary summary = summarize(latency.samples_ns);
    out.begin_object();
    write_strategy(out, latency.strategy);
    out.key("label");
    out.value(latency.label);
    out.key("unit");
    out.value("ns");
    const std::pair<const char*, double> fields[] = {
        {"min", summary.min}, {"mean", summary.mean}, {"p50", summary.p50}, {"p90", summary.p90},
        {"p99", summary.p99}, {"p999", summary.p999}, {"max", summary.max}};
    for (const auto& [name, number] : fields) {
      out.key(name);
      out.value(number);
    }
    out.key("count");
    out.value(summary.count);
    out.key("quantiles");
    out.begin_array();
    for (double value : summary.quantiles) out.value(value);
    out.end_array();
    out.end_object();
  }
  out.end_array();
}

void recorder::write_members(json_writer& out) const {
  write_metrics(out, metrics_);
  write_distributions(out, latencies_);
  out.key("facts");
  out.begin_object();
  for (const auto& [key, fact] : facts_) {
    out.key(key);
    std::visit([&out](const auto& value) { out.value(value); }, fact);
  }
  out.end_object();
}

}  // namespace strata_bench
