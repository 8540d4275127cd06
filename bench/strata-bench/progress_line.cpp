#include "progress_line.hpp"

#include <unistd.h>

#include <cstdio>

#include "cycle_clock.hpp"

namespace strata_bench {

progress_line::progress_line() : terminal_(isatty(STDERR_FILENO) != 0), start_ns_(monotonic_ns()) {}

void progress_line::show(const std::string& text) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "[%5.1fs] ", (monotonic_ns() - start_ns_) / 1e9);
  std::string line = elapsed + text;
  if (!terminal_) {
    std::fprintf(stderr, "%s\n", line.c_str());
    return;
  }
  const std::size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  std::fprintf(stderr, "\r%s", line.c_str());
  std::fflush(stderr);
}

void progress_line::finish() {
  if (terminal_ && last_width_ > 0) std::fputc('\n', stderr);
  last_width_ = 0;
}

}  // namespace strata_bench
