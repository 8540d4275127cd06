// Report lines without allocation (see text_line.hpp).
#include "stack/text_line.hpp"

#include <dlfcn.h>

#include "options/report_output.hpp"
#include "stack/frames.hpp"

namespace strata::stack {

text_line& text_line::text(const char* s) noexcept {
  while (*s != 0) put(*s++);
  return *this;
}

text_line& text_line::decimal(std::uint64_t v) noexcept {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0) put(digits[--n]);
  return *this;
}

text_line& text_line::hex(std::uintptr_t v) noexcept {
  put('0');
  put('x');
  char digits[24];
  int n = 0;
  do digits[n++] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) != 0);
  while (n > 0) put(digits[--n]);
  return *this;
}

void text_line::flush() noexcept {
  buffer_[length_++] = '\n';
  options::report_write(buffer_, length_);
  length_ = 0;
}

// dladdr reads the loader's tables and allocates nothing: safe in a report.
void write_frames(const frames& stack) noexcept {
  for (std::uint32_t i = 0; i < stack.count; ++i) {
    text_line line;
    line.text("    #").decimal(i).text(" ").hex(reinterpret_cast<std::uintptr_t>(stack.pc[i]));
    Dl_info info;
    if (dladdr(stack.pc[i], &info) != 0 && info.dli_fname != nullptr) {
      line.text(" (").text(info.dli_fname).text("+");
      line.hex(reinterpret_cast<std::uintptr_t>(stack.pc[i]) -
               reinterpret_cast<std::uintptr_t>(info.dli_fbase));
      line.text(")");
      if (info.dli_sname != nullptr) line.text(" ").text(info.dli_sname);
    }
    line.flush();
  }
}

}  // namespace strata::stack
