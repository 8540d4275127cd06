// /proc/self/maps, read with read(2) and parsed in place (see maps.hpp).
#include "profile/maps.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace strata::profile {

namespace {

// A hexadecimal field ending at `end_char`; `s` moved past it.
std::uint64_t hex_field(const char*& s, const char* end, char end_char) noexcept {
  std::uint64_t v = 0;
  for (; s < end && *s != end_char; ++s) {
    char c = *s;
    int digit = c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
    v = v << 4 | static_cast<std::uint64_t>(digit & 15);
  }
  if (s < end) ++s;
  return v;
}

void skip_field(const char*& s, const char* end) noexcept {
  while (s < end && *s != ' ') ++s;
  while (s < end && *s == ' ') ++s;
}

// One line "start-limit perms offset dev inode   path": kept when executable and
// backed by a file.
bool parse_line(const char* s, const char* end, mapping& out) noexcept {
  out.start = hex_field(s, end, '-');
  out.limit = hex_field(s, end, ' ');
  bool executable = end - s > 2 && s[2] == 'x';
  skip_field(s, end);
  out.offset = hex_field(s, end, ' ');
  skip_field(s, end);  // device
  skip_field(s, end);  // inode
  out.path = s;
  out.path_length = static_cast<std::size_t>(end - s);
  return executable && out.path_length > 0 && *s == '/';
}

}  // namespace

std::size_t read_mappings(mapping* out, std::size_t capacity, char* text,
                          std::size_t text_capacity) noexcept {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t length = 0;
  for (ssize_t n;
       length < text_capacity && (n = read(fd, text + length, text_capacity - length)) != 0;) {
    if (n > 0) length += static_cast<std::size_t>(n);
    if (n < 0) break;
  }
  close(fd);
  std::size_t count = 0;
  for (const char *line = text, *end = text + length; line < end && count < capacity;) {
    const char* eol = line;
    while (eol < end && *eol != '\n') ++eol;
    if (parse_line(line, eol, out[count])) ++count;
    line = eol + 1;
  }
  return count;
}

}  // namespace strata::profile
