#include "driver.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "allocator_catalog.hpp"
#include "cycle_clock.hpp"
#include "json_writer.hpp"
#include "machine_info.hpp"
#include "progress_line.hpp"
#include "report_renderer.hpp"
#include "scenario.hpp"
#include "worker_process.hpp"

namespace strata_bench {

namespace {

// What happened to one allocator: its catalog entry, a status word and why.
struct allocator_run {
  allocator_entry entry;
  std::string status;  // "measured", "failed", "skipped" or "pending"
  std::string detail;
  std::vector<std::string> records;
};

// The path of the running executable, which is also the worker.
std::string own_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("strata-bench") : path.string();
}

// The scenarios that --only selects, in registry order.
std::vector<const scenario*> selected_scenarios(const bench_options& options) {
  std::vector<const scenario*> chosen;
  for (const scenario& each : all_scenarios()) {
    if (matches_any(std::string(each.name), options.only)) chosen.push_back(&each);
  }
  return chosen;
}

// The catalog entries that --allocators selects; prints an error for unknown names.
bool selected_allocators(const bench_options& options, std::vector<allocator_entry>& chosen) {
  const std::string strata_library =
      options.strata_library.empty() ? STRATA_BENCH_STRATA_LIBRARY : options.strata_library;
  const std::vector<allocator_entry> catalog = allocator_catalog(strata_library);
  for (const std::string& name : options.allocators) {
    const bool known =
        std::any_of(catalog.begin(), catalog.end(),
                    [&](const allocator_entry& entry) { return entry.name == name; });
    if (!known) {
      std::fprintf(stderr, "strata-bench: unknown allocator '%s'\n", name.c_str());
      return false;
    }
  }
  for (const allocator_entry& entry : catalog) {
    if (options.allocators.empty() ||
        std::find(options.allocators.begin(), options.allocators.end(), entry.name) !=
            options.allocators.end()) {
      chosen.push_back(entry);
    }
  }
  return true;
}

// Worker arguments shared by every run: mode, warm-ups and the allocator's name.
std::vector<std::string> worker_arguments(const bench_options& options, const std::string& name) {
  std::vector<std::string> arguments{"--worker", "--allocator-name", name};
  if (options.full) arguments.push_back("--full");
  if (options.warmups >= 0) {
    arguments.insert(arguments.end(), {"--warmups", std::to_string(options.warmups)});
  }
  return arguments;
}

// Runs one worker and appends its records; marks the allocator failed if it did not finish.
void run_one_worker(const bench_options& options, allocator_run& run,
                    std::vector<std::string> arguments, const std::string& label,
                    progress_line& progress) {
  const double timeout = options.full ? 3600 : 600;
  worker_outcome outcome =
      run_worker(own_executable(), arguments, run.entry.library, timeout,
                 [&](const std::string& name) { progress.show(label + " " + name); });
  run.records.insert(run.records.end(), outcome.json_lines.begin(), outcome.json_lines.end());
  if (!outcome.succeeded && run.status != "failed") {
    run.status = "failed";
    run.detail = outcome.failure;
    if (!outcome.stderr_tail.empty()) run.detail += ": " + outcome.stderr_tail;
  }
}

// The allocator whose worker runs the scenarios that compare strategies: glibc (the
// seeds' "plain malloc", and the upstream of their std::pmr resources) when it is
// measured, else the first allocator that is; empty if none is.
std::string strategy_host(const std::vector<allocator_run>& runs) {
  std::string host;
  for (const allocator_run& run : runs) {
    if (run.status != "measured") continue;
    if (host.empty() || run.entry.name == "glibc") host = run.entry.name;
  }
  return host;
}

// One pass of one allocator, `rounds` measured rounds: each warm scenario in a
// worker of its own, so that what one scenario leaves behind (memory faulted in
// or never touched, scattered free lists) does not land on the next; each cold
// scenario in a fresh worker per round. Strategy scenarios run in the host's pass only.
void measure_pass(const bench_options& options, const std::vector<const scenario*>& scenarios,
                  allocator_run& run, bool is_host, int rounds, const std::string& label,
                  progress_line& progress) {
  for (const scenario* each : scenarios) {
    if (each->run == nullptr || (each->compares_strategies && !is_host)) continue;
    const int workers = each->fresh_process ? rounds : 1;
    const int rounds_each = each->fresh_process ? 1 : rounds;
    for (int worker = 0; worker < workers; ++worker) {
      std::vector<std::string> arguments = worker_arguments(options, run.entry.name);
      arguments.insert(arguments.end(), {"--scenarios", std::string(each->name), "--repetitions",
                                         std::to_string(rounds_each)});
      if (each->fresh_process) arguments.insert(arguments.end(), {"--warmups", "0"});
      run_one_worker(options, run, arguments, label, progress);
    }
  }
}

// The date and time in UTC, ISO 8601.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// Writes the scenario list, with each scenario's status and what its columns are.
void write_scenarios(json_writer& out, const std::vector<const scenario*>& scenarios,
                     const std::string& host) {
  out.key("scenarios");
  out.begin_array();
  for (const scenario* each : scenarios) {
    out.begin_object();
    out.key("name");
    out.value(each->name);
    out.key("seed");
    out.value(each->seed);
    out.key("title");
    out.value(each->title);
    out.key("description");
    out.value(each->description);
    out.key("status");
    out.value(each->run == nullptr ? "pending" : "runnable");
    if (each->run == nullptr) {
      out.key("pending_on");
      out.value(each->pending_on);
    }
    out.key("fresh_process");
    out.value(each->fresh_process);
    out.key("columns");
    out.value(each->compares_strategies ? "strategies" : "allocators");
    if (each->compares_strategies) {
      out.key("host");
      out.value(host);
    }
    out.end_object();
  }
  out.end_array();
}

// Writes each allocator's status and the records of all of them.
void write_allocators(json_writer& out, const std::vector<allocator_run>& runs) {
  out.key("allocators");
  out.begin_array();
  for (const allocator_run& run : runs) {
    out.begin_object();
    out.key("name");
    out.value(run.entry.name);
    out.key("status");
    out.value(run.status);
    out.key("detail");
    out.value(run.detail);
    out.key("library");
    out.value(run.entry.library.empty() ? "(none: the C library's malloc)" : run.entry.library);
    out.key("package");
    out.value(run.entry.package);
    out.end_object();
  }
  out.end_array();
  out.key("results");
  out.begin_array();
  for (const allocator_run& run : runs) {
    for (const std::string& record : run.records) out.raw(record);
  }
  out.end_array();
}

// The whole results document.
std::string results_document(const bench_options& options, int argc, char** argv,
                             const std::vector<const scenario*>& scenarios,
                             const std::vector<allocator_run>& runs, const std::string& host,
                             double seconds) {
  json_writer out;
  out.begin_object();
  out.key("schema");
  out.value(1);
  out.key("generated");
  out.value(utc_now());
  std::string command = "strata-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  out.key("command");
  out.value(command);
  out.key("mode");
  out.value(options.full ? "full" : "quick");
  out.key("wall_seconds");
  out.value(seconds);
  out.key("machine");
  std::vector<std::string> packages{"libc6"};
  for (const allocator_run& run : runs) {
    if (run.entry.name != "strata" && run.entry.name != "glibc")
      packages.push_back(run.entry.package);
  }
  write_machine_info(out, packages);
  write_scenarios(out, scenarios, host);
  write_allocators(out, runs);
  out.end_object();
  return out.text();
}

}  // namespace

int run_driver(const bench_options& options, int argc, char** argv) {
  const std::vector<const scenario*> scenarios = selected_scenarios(options);
  if (scenarios.empty()) {
    std::fprintf(stderr, "strata-bench: no scenario matches --only (see --help)\n");
    return 2;
  }
  std::vector<allocator_entry> entries;
  if (!selected_allocators(options, entries)) return 2;

  const double start = monotonic_ns();
  progress_line progress;
  std::vector<allocator_run> runs;
  for (const allocator_entry& entry : entries) {
    allocator_run run{entry, "measured", "", {}};
    if (!allocator_available(run.entry)) {
      run.status = run.entry.name == "strata" ? "pending" : "skipped";
      run.detail =
          run.entry.name == "strata"
              ? "override library not built (" + run.entry.library + ")"
              : "not installed: " + run.entry.library + " (" + install_hint(run.entry) + ")";
      progress.show("[" + run.entry.name + "] " + run.status + ": " + run.detail);
    }
    runs.push_back(std::move(run));
  }
  // The allocators take turns, pass after pass, each pass with its share of the rounds.
  const int passes = pass_count(options);
  const std::string host = strategy_host(runs);
  for (int pass = 0; pass < passes; ++pass) {
    const int rounds =
        measured_rounds(options) / passes + (pass < measured_rounds(options) % passes);
    for (allocator_run& run : runs) {
      if (run.status == "pending" || run.status == "skipped") continue;
      const std::string label = "[pass " + std::to_string(pass + 1) + "/" + std::to_string(passes) +
                                " " + run.entry.name + "]";
      measure_pass(options, scenarios, run, run.entry.name == host, rounds, label, progress);
    }
  }
  progress.finish();
  const double seconds = (monotonic_ns() - start) / 1e9;

  std::filesystem::create_directories(options.out_dir);
  const std::string results_path = options.out_dir + "/results.json";
  const std::string document =
      results_document(options, argc, argv, scenarios, runs, host, seconds);
  std::ofstream(results_path) << document << '\n';
  std::fprintf(stderr, "strata-bench: %.0f s; wrote %s\n", seconds, results_path.c_str());
  for (const allocator_run& run : runs) {
    if (run.status != "measured") {
      std::fprintf(stderr, "  %s: %s (%s)\n", run.entry.name.c_str(), run.status.c_str(),
                   run.detail.c_str());
    }
  }
  int status = 0;
  if (options.render) status = render_report(results_path, options.out_dir, options.readme);
  if (options.json) std::printf("%s\n", document.c_str());
  return status;
}

}  // namespace strata_bench
