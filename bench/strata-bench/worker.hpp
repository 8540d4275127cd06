// Worker mode: runs scenarios inside the process whose malloc is under test.
#pragma once

#include "command_line.hpp"

namespace strata_bench {

// Runs options.scenarios in order, printing "# start <name>" before each and one JSON
// record line after it; returns the process exit status.
int run_worker_mode(const bench_options& options);

}  // namespace strata_bench
