// Folded stacks (see folded.hpp), built without allocating.
#include "profile/folded.hpp"

#include <dlfcn.h>

#include <cstring>

#include "profile/pprof.hpp"

namespace strata::profile {

namespace {

// A line of bounded length (a longer one is cut).
struct line {
  char text[8192];
  std::size_t length = 0;
  void put(const char* s, std::size_t n) noexcept {
    if (n > sizeof(text) - length) n = sizeof(text) - length;
    std::memcpy(text + length, s, n);
    length += n;
  }
  void put(const char* s) noexcept { put(s, std::strlen(s)); }
  void hex(std::uintptr_t v) noexcept {
    char digits[18];
    int n = 0;
    do digits[n++] = "0123456789abcdef"[v & 15];
    while ((v >>= 4) != 0);
    put("0x");
    while (n > 0) put(&digits[--n], 1);
  }
  void decimal(std::uint64_t v) noexcept {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0) put(&digits[--n], 1);
  }
};

// A frame's name: its symbol, else its object's file name and offset, else its address.
void put_frame(line& out, void* pc) noexcept {
  Dl_info info;
  auto address = call_address(pc);
  if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) {
    out.hex(address);
  } else if (info.dli_sname != nullptr) {
    out.put(info.dli_sname);
  } else {
    const char* base = std::strrchr(info.dli_fname, '/');
    out.put(base != nullptr ? base + 1 : info.dli_fname);
    out.put("+");
    out.hex(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  }
}

}  // namespace

void write_folded(sink& out, const bucket* buckets, std::size_t count) noexcept {
  for (std::size_t b = 0; b < count; ++b) {
    const bucket& k = buckets[b];
    if (k.live.bytes < 0.5) continue;
    line l;
    if (k.stack.count == 0) l.put("[unknown]");
    for (std::uint32_t i = k.stack.count; i > 0; --i) {
      put_frame(l, k.stack.pc[i - 1]);
      if (i > 1) l.put(";");
    }
    l.put(" ");
    l.decimal(static_cast<std::uint64_t>(k.live.bytes + 0.5));
    l.put("\n");
    out.write(l.text, l.length);
  }
}

}  // namespace strata::profile
