// strata-bench's command line.
#pragma once

#include <string>
#include <vector>

namespace strata_bench {

struct bench_options {
  bool help = false;
  bool full = false;
  bool json = false;
  bool render = true;
  std::vector<std::string> only;        // glob patterns over scenario names; empty: all
  std::vector<std::string> allocators;  // names from the catalog; empty: all
  std::string out_dir = "report";
  std::string strata_library;  // path of libstrata-malloc.so; empty: the build's default
  std::string readme;          // README to update between the bench markers; empty: none
  int warmups = -1;            // -1: the mode's default
  int repetitions = -1;
  int passes = -1;  // -1: the mode's default
  // Worker mode (internal): run the named scenarios in this process and print records.
  bool worker = false;
  std::string allocator_name;
  std::vector<std::string> scenarios;
};

// Parses argv; on a usage error prints why and returns false.
bool parse_command_line(int argc, char** argv, bench_options& options);

// Warm-up rounds per scenario: --warmups, else 1 (quick) or 2 (--full).
int warmup_rounds(const bench_options& options);

// Measured rounds per scenario: --repetitions, else 5 (quick) or 10 (--full).
int measured_rounds(const bench_options& options);

// Passes over the allocators, each taking its share of the measured rounds, so a
// slow phase of the machine falls on every allocator alike: --passes, else up to 2
// (each process then still measures several rounds after its warm-ups).
int pass_count(const bench_options& options);

// Prints usage and the scenario list.
void print_help();

// True if `name` matches one of the glob patterns (or there are none).
bool matches_any(const std::string& name, const std::vector<std::string>& patterns);

}  // namespace strata_bench
