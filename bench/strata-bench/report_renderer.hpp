// Runs bench/report/render.py, the Python renderer of REPORT.md and the plots.
#pragma once

#include <string>

namespace strata_bench {

// Renders `results_path` into `out_dir` (and the README section when `readme` is set);
// returns 0 on success. Needs a python3 that can import matplotlib.
int render_report(const std::string& results_path, const std::string& out_dir,
                  const std::string& readme);

}  // namespace strata_bench
