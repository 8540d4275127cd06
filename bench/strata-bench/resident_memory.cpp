#include "resident_memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace strata_bench {

// Reads /proc/self/statm with plain system calls, so measuring never allocates.
std::size_t resident_bytes() {
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char text[128] = {};
  const ssize_t length = read(fd, text, sizeof text - 1);
  close(fd);
  if (length <= 0) return 0;
  char* after_size = nullptr;
  std::strtoull(text, &after_size, 10);
  const unsigned long long pages = std::strtoull(after_size, nullptr, 10);
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace strata_bench
