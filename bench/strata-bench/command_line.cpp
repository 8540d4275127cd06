#include "command_line.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "scenario.hpp"

namespace strata_bench {

namespace {

// Splits "a,b,c" into its parts, skipping empty ones.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    if (!part.empty()) parts.emplace_back(part);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

// Parses a count of at least `minimum`; prints an error and returns false otherwise.
bool parse_count(const char* flag, const char* text, int minimum, int& count) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < minimum || value > 1'000'000) {
    std::fprintf(stderr, "strata-bench: %s needs a number >= %d, got '%s'\n", flag, minimum, text);
    return false;
  }
  count = static_cast<int>(value);
  return true;
}

}  // namespace

int warmup_rounds(const bench_options& options) {
  return options.warmups >= 0 ? options.warmups : (options.full ? 2 : 1);
}

int measured_rounds(const bench_options& options) {
  return options.repetitions > 0 ? options.repetitions : (options.full ? 10 : 5);
}

int pass_count(const bench_options& options) {
  int passes = options.passes > 0 ? options.passes : 2;
  return passes < measured_rounds(options) ? passes : measured_rounds(options);
}

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  for (const std::string& pattern : patterns) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

bool parse_command_line(int argc, char** argv, bench_options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    const bool has_value = i + 1 < argc;
    const auto value = [&]() -> const char* { return argv[++i]; };
    if (flag == "--help" || flag == "-h") {
      options.help = true;
    } else if (flag == "--full") {
      options.full = true;
    } else if (flag == "--json") {
      options.json = true;
    } else if (flag == "--no-render") {
      options.render = false;
    } else if (flag == "--worker") {
      options.worker = true;
    } else if (!has_value) {
      std::fprintf(stderr, "strata-bench: unknown option or missing value: %s (see --help)\n",
                   argv[i]);
      return false;
    } else if (flag == "--only") {
      for (auto& pattern : split_list(value())) options.only.push_back(pattern);
    } else if (flag == "--allocators") {
      options.allocators = split_list(value());
    } else if (flag == "--out") {
      options.out_dir = value();
    } else if (flag == "--strata-lib") {
      options.strata_library = value();
    } else if (flag == "--readme") {
      options.readme = value();
    } else if (flag == "--warmups") {
      if (!parse_count("--warmups", value(), 0, options.warmups)) return false;
    } else if (flag == "--repetitions") {
      if (!parse_count("--repetitions", value(), 1, options.repetitions)) return false;
    } else if (flag == "--passes") {
      if (!parse_count("--passes", value(), 1, options.passes)) return false;
    } else if (flag == "--allocator-name") {
      options.allocator_name = value();
    } else if (flag == "--scenarios") {
      options.scenarios = split_list(value());
    } else {
      std::fprintf(stderr, "strata-bench: unknown option %s (see --help)\n", argv[i]);
      return false;
    }
  }
  return true;
}

void print_help() {
  std::printf(
      "usage: strata-bench [options]\n"
      "\n"
      "Runs the scenarios of the five seed reports under each allocator, each allocator in its\n"
      "own process (LD_PRELOAD), in passes that take turns between the allocators, and writes\n"
      "DIR/results.json, DIR/REPORT.md and DIR/*.png.\n"
      "\n"
      "  --full              more samples, repetitions and thread counts (default: quick run)\n"
      "  --only GLOB[,GLOB]  only scenarios whose name matches (e.g. 'cell/*'); repeatable\n"
      "  --allocators LIST   comma-separated: strata,glibc,mimalloc,mimalloc3,jemalloc,\n"
      "                      tcmalloc,tbbmalloc\n"
      "  --out DIR           output folder (default: report)\n"
      "  --json              also print results.json to stdout\n"
      "  --no-render         write results.json only, no REPORT.md or plots\n"
      "  --readme FILE       put the headline table into FILE between the bench markers\n"
      "  --warmups N         warm-up rounds per scenario (quick: 1, full: 2)\n"
      "  --repetitions N     measured rounds per scenario (quick: 5, full: 10)\n"
      "  --passes N          turns per allocator the rounds are split into (default: 2)\n"
      "  --strata-lib PATH   strata's malloc library (default: this build's libstrata-malloc.so)\n"
      "  --help              this text\n"
      "\n"
      "scenarios:\n");
  for (const scenario& each : all_scenarios()) {
    std::string line = "  " + std::string(each.name);
    line.resize(std::max<std::size_t>(line.size() + 1, 31), ' ');
    line += each.title;
    if (each.run == nullptr) line += "  [pending: " + std::string(each.pending_on) + "]";
    std::puts(line.c_str());
  }
}

}  // namespace strata_bench
