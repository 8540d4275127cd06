// Option table, environment parsing and the C option API. Runs before the C
// runtime may be ready (the malloc override calls it), so it never allocates
// and writes with write(2).
#include "options/options.hpp"

#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "os/mutex.hpp"

extern char** environ;

// The build option STRATA_SECURE=ON makes secure mode the default.
#ifndef STRATA_SECURE_BY_DEFAULT
#define STRATA_SECURE_BY_DEFAULT 0
#endif
// The debug preset (STRATA_DEBUG=ON) makes debug mode the default.
#ifndef STRATA_DEBUG_BY_DEFAULT
#define STRATA_DEBUG_BY_DEFAULT 0
#endif

namespace strata::options {

std::atomic<long> values[STRATA_OPTION_COUNT];
std::atomic<bool> initialized{false};

namespace {

enum class kind { flag, number, bytes };

struct descriptor {
  const char* name;  // environment variable without the STRATA_ prefix
  kind type;
  long default_value;
};

constexpr descriptor table[STRATA_OPTION_COUNT] = {
    {"VERBOSE", kind::flag, 0},
    {"SHOW_STATS", kind::flag, 0},
    {"SHOW_ERRORS", kind::flag, 0},
    {"PURGE_DELAY_MS", kind::number, 100},
    {"PURGE_DECOMMITS", kind::flag, 1},
    {"LARGE_OS_PAGES", kind::flag, 0},
    {"SECURE", kind::flag, STRATA_SECURE_BY_DEFAULT},
    {"ARENA_RESERVE", kind::bytes, 0},
    {"PURGE_THREAD", kind::flag, 1},
    {"DEBUG", kind::flag, STRATA_DEBUG_BY_DEFAULT},
};

os::mutex init_lock;

void write_str(const char* s) noexcept {
  ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

// Format a signed long without stdio.
const char* format_long(long v, char (&buf)[24]) noexcept {
  char* p = buf + sizeof(buf) - 1;
  *p = 0;
  unsigned long u = v < 0 ? 0UL - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do *--p = static_cast<char>('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  return p;
}

// STRATA_* variables that are not options: the malloc override's trace path,
// the CPU facade's backend, the GPU allocator's configuration.
bool read_elsewhere(const char* name) noexcept {
  for (const char* other : {"TRACE=", "CPU_BACKEND=", "GPU_ALLOC_CONF="})
    if (std::strncmp(name, other, std::strlen(other)) == 0) return true;
  return false;
}

bool equals_ignore_case(const char* a, const char* b) noexcept {
  for (; *a != 0 && *b != 0; ++a, ++b) {
    char x = (*a >= 'A' && *a <= 'Z') ? static_cast<char>(*a - 'A' + 'a') : *a;
    if (x != *b) return false;
  }
  return *a == *b;
}

// Parse an option value; false when it is not valid for the option's kind.
bool parse(const descriptor& d, const char* text, long* out) noexcept {
  if (d.type == kind::flag) {
    for (const char* yes : {"1", "true", "on", "yes"})
      if (equals_ignore_case(text, yes)) return *out = 1, true;
    for (const char* no : {"0", "false", "off", "no"})
      if (equals_ignore_case(text, no)) return *out = 0, true;
    return false;
  }
  const char* s = text;
  bool negative = *s == '-';
  if (negative) ++s;
  if (*s < '0' || *s > '9') return false;
  long v = 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    if (v > (LONG_MAX - 9) / 10) return false;
    v = v * 10 + (*s - '0');
  }
  if (d.type == kind::bytes && *s != 0) {
    int shift = 0;
    switch (*s | 0x20) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      default:
        return false;
    }
    ++s;
    if ((*s | 0x20) == 'i') ++s;
    if ((*s | 0x20) == 'b') ++s;
    if (v > (LONG_MAX >> shift)) return false;
    v <<= shift;
  }
  if (*s != 0 || (negative && d.type == kind::bytes)) return false;
  *out = negative ? -v : v;
  return true;
}

void warn(const char* what, const char* variable) noexcept {
  write_str("strata: warning: ");
  write_str(what);
  write_str(" '");
  write_str(variable);
  write_str("'; using the default\n");
}

// Read every STRATA_* variable: known ones set their option, others warn.
void read_environment() noexcept {
  for (int i = 0; i < STRATA_OPTION_COUNT; ++i)
    values[i].store(table[i].default_value, std::memory_order_relaxed);
  if (environ == nullptr) return;
  for (char** env = environ; *env != nullptr; ++env) {
    const char* entry = *env;
    if (std::strncmp(entry, "STRATA_", 7) != 0) continue;
    const char* name = entry + 7;
    const char* eq = std::strchr(name, '=');
    if (eq == nullptr) continue;
    std::size_t len = static_cast<std::size_t>(eq - name);
    if (read_elsewhere(name)) continue;
    int found = -1;
    for (int i = 0; i < STRATA_OPTION_COUNT; ++i)
      if (std::strlen(table[i].name) == len && std::strncmp(table[i].name, name, len) == 0)
        found = i;
    if (found < 0) {
      warn("unknown option", entry);
      continue;
    }
    long v = 0;
    if (parse(table[found], eq + 1, &v))
      values[found].store(v, std::memory_order_relaxed);
    else
      warn("unparsable value in", entry);
  }
}

}  // namespace

void initialize() noexcept {
  std::lock_guard<os::mutex> guard(init_lock);
  if (initialized.load(std::memory_order_relaxed)) return;
  read_environment();
  initialized.store(true, std::memory_order_release);
  if (values[STRATA_OPTION_VERBOSE].load(std::memory_order_relaxed) != 0) print();
}

void reload_from_environment() noexcept {
  std::lock_guard<os::mutex> guard(init_lock);
  read_environment();
  initialized.store(true, std::memory_order_release);
}

void print() noexcept {
  for (int i = 0; i < STRATA_OPTION_COUNT; ++i) {
    char buf[24];
    write_str("strata: option STRATA_");
    write_str(table[i].name);
    write_str("=");
    write_str(format_long(values[i].load(std::memory_order_relaxed), buf));
    write_str("\n");
  }
}

}  // namespace strata::options

using namespace strata;

long strata_option_get(strata_option_t option) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT) return 0;
  return options::get(option);
}

void strata_option_set(strata_option_t option, long value) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT) return;
  if (!options::initialized.load(std::memory_order_acquire)) options::initialize();
  options::values[option].store(value, std::memory_order_relaxed);
}

const char* strata_option_name(strata_option_t option) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT) return nullptr;
  return options::table[option].name;
}
