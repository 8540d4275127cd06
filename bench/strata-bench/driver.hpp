// Driver mode: one worker process per allocator, results.json, then the report renderer.
#pragma once

#include "command_line.hpp"

namespace strata_bench {

// Runs the selected scenarios for the selected allocators and writes the report;
// returns the process exit status.
int run_driver(const bench_options& options, int argc, char** argv);

}  // namespace strata_bench
