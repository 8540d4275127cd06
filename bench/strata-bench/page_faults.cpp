#include "page_faults.hpp"

#include <sys/resource.h>

#include <string>

namespace strata_bench {

// getrusage is one system call and allocates nothing, so it can sit between phases.
long long minor_page_faults() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return usage.ru_minflt;
}

void record_round_faults(recorder& out, int round, long long faults, bool measured) {
  const auto count = static_cast<double>(faults);
  if (measured) out.add("minor page faults", "faults", count);
  out.fact("minor page faults, round " + std::to_string(round), count);
}

}  // namespace strata_bench
