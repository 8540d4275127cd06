// The process's address space: how much is mapped now (VmSize), and a limit on
// it (RLIMIT_AS) set relative to that, as `ulimit -v` does for a shell.
#pragma once

#include <sys/resource.h>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace strata_limits {

// Whether a sanitizer runs in this process: its shadow memory already spans
// terabytes of address space, so a limit on it means nothing there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

// VmSize of this process in bytes (0 when /proc is not readable).
inline std::size_t mapped_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::size_t kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmSize:", 7) == 0) {
      std::sscanf(line + 7, "%zu", &kib);
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

// Let the process map at most `headroom` bytes more than it maps now.
inline bool limit_address_space(std::size_t headroom) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) != 0) return false;
  limit.rlim_cur = mapped_bytes() + headroom;
  return ::setrlimit(RLIMIT_AS, &limit) == 0;
}

}  // namespace strata_limits
