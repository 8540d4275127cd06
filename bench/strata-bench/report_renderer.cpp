#include "report_renderer.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace strata_bench {

namespace {

// Quotes a string for the shell.
std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The first Python interpreter that can import matplotlib: $STRATA_BENCH_PYTHON, then
// python3 on PATH, then Debian's /usr/bin/python3; empty if none can.
std::string python_with_matplotlib() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("STRATA_BENCH_PYTHON")) candidates.emplace_back(chosen);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& python : candidates) {
    const std::string probe = shell_quoted(python) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

}  // namespace

int render_report(const std::string& results_path, const std::string& out_dir,
                  const std::string& readme) {
  const std::string python = python_with_matplotlib();
  if (python.empty()) {
    std::fprintf(stderr,
                 "strata-bench: no python3 with matplotlib (Debian: python3-matplotlib); "
                 "results.json written, report not rendered\n");
    return 1;
  }
  const char* script = std::getenv("STRATA_BENCH_RENDERER");
  std::string command = shell_quoted(python) + " " +
                        shell_quoted(script != nullptr ? script : STRATA_BENCH_RENDERER) + " " +
                        shell_quoted(results_path) + " --out " + shell_quoted(out_dir);
  if (!readme.empty()) command += " --readme " + shell_quoted(readme);
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::fprintf(stderr, "strata-bench: the report renderer failed (%s)\n", command.c_str());
    return 1;
  }
  std::fprintf(stderr, "strata-bench: wrote %s/REPORT.md and its plots\n", out_dir.c_str());
  return 0;
}

}  // namespace strata_bench
