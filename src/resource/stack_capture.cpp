// Stack capture for the tracking adaptor: backtrace() into a caller's fixed
// array, and symbol names for the leak report. Built without exceptions.
#include <execinfo.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace strata::detail {

__attribute__((visibility("default"))) std::size_t capture_stack(void** frames, std::size_t depth,
                                                                 std::size_t skip) noexcept;
__attribute__((visibility("default"))) void describe_stack(void* const* frames, std::size_t count,
                                                           std::string& out);

// backtrace() fills a buffer from the innermost frame; the first `skip` + 1
// (this function and the adaptor's) are not the caller's, so drop them.
std::size_t capture_stack(void** frames, std::size_t depth, std::size_t skip) noexcept {
  constexpr std::size_t most = 64;
  void* buffer[most + 8];
  const std::size_t wanted = skip + 1 + (depth < most ? depth : most);
  const int got = backtrace(buffer, static_cast<int>(wanted));
  std::size_t stored = 0;
  for (std::size_t i = skip + 1; i < static_cast<std::size_t>(got) && stored < depth; ++i)
    frames[stored++] = buffer[i];
  return stored;
}

// One indented line per frame, named by the dynamic symbol table when it can.
void describe_stack(void* const* frames, std::size_t count, std::string& out) {
  char** names = backtrace_symbols(frames, static_cast<int>(count));
  for (std::size_t i = 0; i < count; ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "    #%zu %p ", i, frames[i]);
    out += line;
    out += names != nullptr ? names[i] : "?";
    out += '\n';
  }
  std::free(names);
}

}  // namespace strata::detail
