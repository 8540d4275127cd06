// Seed 000's tracking-allocator claim (1-2% overhead when enabled, none when
// compiled out), measured on its mixed stress through the strata heap: the bare
// heap resource, the tracking adaptor compiled out (tracking<heap, false>), the
// tracking adaptor on (exact and thread-safe, exact for one thread with strata::no_lock,
// and sampled 1 per 512 KiB), and the statistics adaptor, each strategy in turn within every pass
// (starting with a different one each pass) so neither a slow phase of the machine nor the order
// favours any.
#include <strata/resource.hpp>
#include <strata/statistics.hpp>
#include <strata/synchronized.hpp>
#include <strata/tracking.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// 90% of sizes in 64 B-4 KB, 9% in 4-64 KB, 1% in 64 KB-1 MB, log-uniform within each
// range: the size mix of xsigma/mixed-stress.
std::size_t tracking_stress_size(std::mt19937_64& random) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double pick = unit(random);
  const double low = pick < 0.90 ? 64 : pick < 0.99 ? 4096 : 65536;
  const double high = pick < 0.90 ? 4096 : pick < 0.99 ? 65536 : 1048576;
  return static_cast<std::size_t>(low * std::pow(high / low, unit(random)));
}

struct live_block {
  unsigned char* data;
  std::size_t size;
  unsigned char pattern;
};

// One run of the mixed stress through `resource`: 10,000 allocations interleaved
// with frees of random live blocks (p = 0.4), each block filled, checked before its
// free; returns the milliseconds it took and clears `intact` on a damaged block.
template <class Resource>
double stress_ms(Resource& resource, std::vector<live_block>& live, bool& intact) {
  std::mt19937_64 random(2025);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto release = [&](std::size_t index) {
    const live_block& b = live[index];
    intact &= b.data[0] == b.pattern && b.data[b.size - 1] == b.pattern;
    resource.deallocate(b.data, b.size, alignof(std::max_align_t));
    live[index] = live.back();
    live.pop_back();
  };
  const double start = monotonic_ns();
  for (int made = 0; made < 10'000;) {
    if (!live.empty() && unit(random) < 0.4) {
      release(random() % live.size());
      continue;
    }
    const std::size_t size = tracking_stress_size(random);
    auto* data = static_cast<unsigned char*>(resource.allocate(size, alignof(std::max_align_t)));
    const auto pattern = static_cast<unsigned char>(made * 31 + 7);
    std::memset(data, pattern, size);
    live.push_back({data, size, pattern});
    ++made;
  }
  while (!live.empty()) release(live.size() - 1);
  return (monotonic_ns() - start) / 1e6;
}

// The median of `values` (copied, so the caller's order stays).
double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

}  // namespace

// The mixed stress through each strategy in turn, once per repetition; facts give the
// median overhead of tracking on and compiled out over the bare heap.
void xsigma_tracking_overhead(const run_settings& settings, recorder& out) {
  using heap = strata::heap_resource;
  heap bare;
  strata::tracking<heap, false> compiled_out;
  strata::tracking<heap, true> tracked;
  strata::tracking<heap, true, 0, strata::no_lock> tracked_one_thread;
  strata::tracking<heap, true> tracked_sampled(
      strata::tracking_options{.sample_bytes = 512 * 1024, .seed = 2025});
  strata::statistics<heap> counted;
  static_assert(sizeof(compiled_out) == sizeof(bare));
  std::vector<live_block> live;
  live.reserve(10'000);
  bool intact = true;
  constexpr int strategies = 6;
  // Each strategy's time over the heap alone's in the same pass, for every measured pass:
  // pairing runs made moments apart cancels the machine's slow phases.
  std::vector<double> ratios[strategies];
  const int passes = settings.full ? 25 : 10;
  int round = 0;
  run_rounds(settings, [&](bool measured) {
    double sums[strategies] = {0, 0, 0, 0, 0, 0};
    // Each pass starts with the next strategy, so none always follows the same one.
    for (int pass = 0; pass < passes; ++pass, ++round) {
      double ms[strategies];
      for (int turn = 0; turn < strategies; ++turn) {
        const int which = (turn + round) % strategies;
        if (which == 0) ms[which] = stress_ms(bare, live, intact);
        if (which == 1) ms[which] = stress_ms(compiled_out, live, intact);
        if (which == 2) ms[which] = stress_ms(tracked, live, intact);
        if (which == 3) ms[which] = stress_ms(tracked_one_thread, live, intact);
        if (which == 4) ms[which] = stress_ms(counted, live, intact);
        if (which == 5) ms[which] = stress_ms(tracked_sampled, live, intact);
      }
      for (int i = 0; i < strategies; ++i) {
        sums[i] += ms[i];
        if (measured && ms[0] > 0) ratios[i].push_back(ms[i] / ms[0]);
      }
    }
    if (!measured) return;
    const char* names[strategies] = {"heap alone",         "tracking compiled out",
                                     "tracking on",        "tracking on, one thread (no_lock)",
                                     "statistics adaptor", "tracking on, sampled (1 per 512 KiB)"};
    for (int i = 0; i < strategies; ++i)
      out.add_for(names[i], "mixed stress, 10,000 allocations", "ms", sums[i] / passes);
  });
  const auto overhead = [&](int which) {
    return ratios[which].empty() ? 0 : (median_of(ratios[which]) - 1) * 100;
  };
  out.fact("tracking on overhead over the heap, % (median of paired passes)", overhead(2));
  out.fact("tracking on, one thread, overhead over the heap, % (median of paired passes)",
           overhead(3));
  out.fact(
      "tracking on, sampled 1 per 512 KiB, overhead over the heap, % (median of paired passes)",
      overhead(5));
  out.fact("tracking compiled out overhead over the heap, % (median of paired passes)",
           overhead(1));
  out.fact("statistics adaptor overhead over the heap, % (median of paired passes)", overhead(4));
  out.fact("tracking compiled out keeps the resource's size (no bytes added)",
           sizeof(compiled_out) == sizeof(bare));
  out.fact("live blocks left in the tracking adaptor", static_cast<double>(tracked.live_blocks()));
  out.fact("live blocks and records left in the sampled tracking adaptor",
           static_cast<double>(tracked_sampled.live_blocks() + tracked_sampled.live().size()));
  out.fact("memory integrity", intact);
}

}  // namespace strata_bench
