// The ledger's links to the heap: direct in libstrata, found at run time in a
// standalone ledger (heap_link.hpp).
#include "ledger/heap_link.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#ifdef STRATA_LEDGER_STANDALONE
// Weak: null unless a strata heap (libstrata-malloc.so, libstrata.so) is loaded.
extern "C" __attribute__((weak)) void strata_stats_get(strata_stats_t* out) noexcept;
extern "C" __attribute__((weak)) long strata_option_get(strata_option_t option) noexcept;
#else
#include "options/report_output.hpp"
#endif

namespace strata::ledger_heap {

// The heap's own call, or zeros without one.
void read_stats(strata_stats_t* out) noexcept {
  std::memset(out, 0, sizeof(*out));
#ifdef STRATA_LEDGER_STANDALONE
  if (&strata_stats_get == nullptr) return;
#endif
  strata_stats_get(out);
}

// The heap's option table; standalone without a heap, the variable itself.
bool show_stats() noexcept {
#ifdef STRATA_LEDGER_STANDALONE
  if (&strata_option_get == nullptr) {
    const char* value = std::getenv("STRATA_SHOW_STATS");
    return value != nullptr && (std::strcmp(value, "1") == 0 || std::strcmp(value, "true") == 0 ||
                                std::strcmp(value, "yes") == 0 || std::strcmp(value, "on") == 0);
  }
#endif
  return strata_option_get(STRATA_OPTION_SHOW_STATS) != 0;
}

// The heap's report output (a copy of stderr taken at start); standalone, stderr.
void report(const char* text, std::size_t length) noexcept {
#ifdef STRATA_LEDGER_STANDALONE
  while (length > 0) {
    ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
#else
  options::report_write(text, length);
#endif
}

}  // namespace strata::ledger_heap
