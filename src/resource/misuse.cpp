// The one place strata's C++ allocators report detected misuse.
// Built without exceptions, so it declares what it defines rather than include
// resource.hpp; the declaration there must match. Built standalone (the GPU
// plugin, which carries no heap and so no report options), the line goes to stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#ifndef STRATA_LEDGER_STANDALONE
#include "options/report_output.hpp"
#endif

namespace strata::detail {

[[noreturn]] __attribute__((visibility("default"), cold)) void report_misuse(
    const char* what, const char* where, const void* address) noexcept;

// One line to the report output (stderr, or where STRATA_STATS_FILE says)
// naming what went wrong and where, then abort: continuing after a stale mark
// or a foreign free would corrupt memory silently.
void report_misuse(const char* what, const char* where, const void* address) noexcept {
  char line[256];
  int n = std::snprintf(line, sizeof line, "strata: %s in %s (address %p)\n", what, where, address);
  if (n > 0) {
#ifdef STRATA_LEDGER_STANDALONE
    std::fputs(line, stderr);
#else
    options::report_write(line, std::min(static_cast<std::size_t>(n), sizeof line - 1));
#endif
  }
  std::abort();
}

}  // namespace strata::detail
