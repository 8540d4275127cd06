// Starts a worker process with a chosen LD_PRELOAD and collects what it prints.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace strata_bench {

// How a worker ended and what it wrote.
struct worker_outcome {
  bool succeeded = false;
  std::string failure;                  // "exit status 3", "killed by signal 11", "timed out"
  std::vector<std::string> json_lines;  // the result records, one JSON object per line
  std::string stderr_tail;              // the last lines it wrote to stderr
};

// Runs `executable arguments...` with LD_PRELOAD set to `preload` (unset when empty),
// calling `on_start(name)` for each "# start <name>" line, and kills it after
// `timeout_seconds`.
worker_outcome run_worker(const std::string& executable, const std::vector<std::string>& arguments,
                          const std::string& preload, double timeout_seconds,
                          const std::function<void(const std::string&)>& on_start);

}  // namespace strata_bench
