#include "worker.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cycle_clock.hpp"
#include "json_writer.hpp"
#include "scenario.hpp"
#include "thread_team.hpp"

namespace strata_bench {

namespace {

// The shared object that the name `malloc` resolves to in this process.
std::string malloc_provider() {
  Dl_info info{};
  void* symbol = dlsym(RTLD_DEFAULT, "malloc");
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

// The registry row with this name, or null.
const scenario* find_scenario(const std::string& name) {
  for (const scenario& each : all_scenarios()) {
    if (each.name == name) return &each;
  }
  return nullptr;
}

// Runs one scenario and prints its record as one JSON line.
void run_and_print(const scenario& each, const run_settings& settings, const bench_options& options,
                   const std::string& provider) {
  std::printf("# start %s\n", std::string(each.name).c_str());
  std::fflush(stdout);
  recorder results;
  const double start = monotonic_ns();
  each.run(settings, results);
  const double seconds = (monotonic_ns() - start) / 1e9;

  json_writer out;
  out.begin_object();
  out.key("scenario");
  out.value(each.name);
  out.key("allocator");
  out.value(options.allocator_name);
  out.key("malloc_from");
  out.value(provider);
  out.key("warmups");
  out.value(settings.warmups);
  out.key("repetitions");
  out.value(settings.repetitions);
  out.key("seconds");
  out.value(seconds);
  results.write_members(out);
  out.end_object();
  std::printf("%s\n", out.text().c_str());
  std::fflush(stdout);
}

}  // namespace

int run_worker_mode(const bench_options& options) {
  run_settings settings;
  settings.full = options.full;
  settings.warmups = warmup_rounds(options);
  settings.repetitions = measured_rounds(options);
  pin_current_thread(0);
  cycle_clock();
  const std::string provider = malloc_provider();
  for (const std::string& name : options.scenarios) {
    const scenario* each = find_scenario(name);
    if (each == nullptr || each->run == nullptr) {
      std::fprintf(stderr, "strata-bench worker: no runnable scenario '%s'\n", name.c_str());
      return 2;
    }
    run_and_print(*each, settings, options, provider);
  }
  return 0;
}

}  // namespace strata_bench
