// A line of text built in a fixed buffer and written to the report output:
// what fault and leak reports use, since they may run in a signal handler or
// inside malloc and so must not allocate or call stdio.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::stack {

class text_line {
 public:
  text_line& text(const char* s) noexcept;
  text_line& decimal(std::uint64_t v) noexcept;
  text_line& hex(std::uintptr_t v) noexcept;
  // Write what was built to the report output (with a newline) and start again.
  void flush() noexcept;

 private:
  void put(char c) noexcept {
    if (length_ < sizeof(buffer_) - 1) buffer_[length_++] = c;
  }
  char buffer_[512];
  std::size_t length_ = 0;
};

struct frames;

// One line per frame: its address, object file and offset, and symbol when the
// dynamic symbol table names it.
void write_frames(const frames& stack) noexcept;

}  // namespace strata::stack
