// The report descriptor: chosen at start, used by every report strata writes.
// Runs inside malloc's first call and at exit, so it never allocates.
#include "options/report_output.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "options/options.hpp"

namespace strata::options {

namespace {

std::atomic<int> output{STDERR_FILENO};
std::atomic<bool> to_stats_file{false};

// Whether an option that prints at exit or on error is on.
bool report_asked() noexcept {
  return get(STRATA_OPTION_SHOW_STATS) != 0 || get(STRATA_OPTION_SHOW_ERRORS) != 0 ||
         get(STRATA_OPTION_VERBOSE) != 0;
}

// STRATA_STATS_FILE opened for appending, or -1 (with a warning on stderr).
int open_stats_file(const char* path) noexcept {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    const char* reason = std::strerror(errno);
    report_write("strata: warning: STRATA_STATS_FILE=");
    report_write(path);
    report_write(": ");
    report_write(reason);
    report_write("; reports go to stderr\n");
  }
  return fd;
}

}  // namespace

void open_report_output() noexcept {
  int saved_errno = errno;  // the first malloc of a program must not change it
  const char* path = std::getenv("STRATA_STATS_FILE");
  int fd = path != nullptr && *path != 0 ? open_stats_file(path) : -1;
  to_stats_file.store(fd >= 0, std::memory_order_relaxed);
  if (fd < 0 && report_asked()) fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  int previous = output.exchange(fd >= 0 ? fd : STDERR_FILENO, std::memory_order_acq_rel);
  if (previous != STDERR_FILENO) ::close(previous);
  errno = saved_errno;
}

bool report_output_is_stats_file() noexcept {
  return to_stats_file.load(std::memory_order_relaxed);
}

int report_fd() noexcept {
  return output.load(std::memory_order_acquire);
}

void report_write(const char* text, std::size_t length) noexcept {
  int fd = report_fd();
  while (length > 0) {
    ssize_t written = ::write(fd, text, length);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}

void report_write(const char* text) noexcept {
  report_write(text, std::strlen(text));
}

}  // namespace strata::options
