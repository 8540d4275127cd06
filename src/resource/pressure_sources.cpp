// The built-in readings of memory-pressure monitoring: process RSS and the
// strata heap's committed bytes. Built without exceptions.
#include <strata/strata.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>

namespace strata {

__attribute__((visibility("default"))) std::size_t process_resident_bytes() noexcept;
__attribute__((visibility("default"))) std::size_t heap_committed_bytes() noexcept;

// The second field of /proc/self/statm is resident pages.
std::size_t process_resident_bytes() noexcept {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long total = 0, resident = 0;
  const int read = std::fscanf(statm, "%llu %llu", &total, &resident);
  std::fclose(statm);
  if (read != 2) return 0;
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// What the heap holds committed, all threads together.
std::size_t heap_committed_bytes() noexcept {
  strata_stats_t stats;
  strata_stats_get(&stats);
  return stats.committed;
}

}  // namespace strata
