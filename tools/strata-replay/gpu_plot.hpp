// strata-replay --gpu's plot: reserved bytes over the trace for each
// configuration, as a self-contained SVG (or an HTML page holding it and the table).
#ifndef STRATA_REPLAY_GPU_PLOT_HPP
#define STRATA_REPLAY_GPU_PLOT_HPP

#include <strata/gpu/caching/replay.hpp>

#include <string>
#include <vector>

namespace strata_replay {

struct gpu_run {
  std::string config;  // as given; empty: the defaults
  strata::gpu::replay_result result;
  double seconds = 0.0;
};

// The SVG: one line of reserved bytes per configuration, the first one's
// allocated bytes dashed, a cross where a configuration runs out of memory.
std::string gpu_plot_svg(const std::vector<gpu_run>& runs, std::uint64_t records);

}  // namespace strata_replay

#endif  // STRATA_REPLAY_GPU_PLOT_HPP
