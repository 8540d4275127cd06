// A benchmark scenario: one table or figure of a seed report, reproduced on this machine.
#pragma once

#include <span>
#include <string_view>

#include "recorder.hpp"

namespace strata_bench {

// How much work a worker does: rounds whose results are discarded, then measured ones.
struct run_settings {
  int warmups = 1;
  int repetitions = 5;
  bool full = false;  // the longer sample counts and thread counts of --full
};

using scenario_function = void (*)(const run_settings&, recorder&);

// One row of the scenario registry. A scenario whose `run` is null waits for a strata
// component (`pending_on`) and appears in the report as pending. A scenario that
// compares strategies (strata's session heap, frame arena or pools against the seed's
// std::pmr resources, mimalloc heap, bump arena and plain malloc) runs in one worker
// per pass, the host allocator's (glibc when it is in the run), and the report gives
// each strategy a column where the other scenarios give each allocator one.
struct scenario {
  std::string_view name;         // "<seed system>/<case>", matched by --only
  std::string_view seed;         // the seed report's number: "000" ... "004"
  std::string_view title;        // the label used in the report
  std::string_view description;  // what exactly is measured
  scenario_function run = nullptr;
  std::string_view pending_on = {};
  bool fresh_process = false;        // measured once per new process (cold start)
  bool compares_strategies = false;  // columns are strategies, run in the host's worker
};

// Every scenario, in report order.
std::span<const scenario> all_scenarios();

// Runs `body(false)` for each warm-up round, then `body(true)` for each measured one.
template <class Body>
void run_rounds(const run_settings& settings, Body&& body) {
  for (int round = 0; round < settings.warmups; ++round) body(false);
  for (int round = 0; round < settings.repetitions; ++round) body(true);
}

}  // namespace strata_bench
