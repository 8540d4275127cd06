// The one place strata's C++ allocators report detected misuse.
// Built without exceptions, so it declares what it defines rather than include
// resource.hpp; the declaration there must match.
#include <cstdio>
#include <cstdlib>

namespace strata::detail {

[[noreturn]] __attribute__((visibility("default"), cold)) void report_misuse(
    const char* what, const char* where, const void* address) noexcept;

// One line on stderr naming what went wrong and where, then abort: continuing
// after a stale mark or a foreign free would corrupt memory silently.
void report_misuse(const char* what, const char* where, const void* address) noexcept {
  std::fprintf(stderr, "strata: %s in %s (address %p)\n", what, where, address);
  std::fflush(stderr);
  std::abort();
}

}  // namespace strata::detail
