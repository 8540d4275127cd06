// strata-bench: the seed reports' scenarios, run side by side for every allocator.
// The same executable is the driver (default) and the per-allocator worker (--worker).
#include "command_line.hpp"
#include "driver.hpp"
#include "worker.hpp"

int main(int argc, char** argv) {
  strata_bench::bench_options options;
  if (!strata_bench::parse_command_line(argc, argv, options)) return 2;
  if (options.help) {
    strata_bench::print_help();
    return 0;
  }
  if (options.worker) return strata_bench::run_worker_mode(options);
  return strata_bench::run_driver(options, argc, argv);
}
