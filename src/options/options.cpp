// Option table, environment parsing and the C option API. Runs before the C
// runtime may be ready (the malloc override calls it), so it never allocates
// and writes with write(2).
#include "options/options.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "options/report_output.hpp"
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

// flag: a boolean; number: a decimal number; bytes: one with a K, M, G or T suffix.
enum class kind { flag, number, bytes };

struct descriptor {
  const char* name;  // environment variable without the STRATA_ prefix
  kind type;
  long default_value;
  long min_value;
  long max_value;
  const char* unit;  // what a number counts, for the warning
};

constexpr long day_ms = 24L * 3600 * 1000;
constexpr long max_reserve = 1L << 46;  // 64 TiB: half of a 47-bit address space

constexpr descriptor table[STRATA_OPTION_COUNT] = {
    {"VERBOSE", kind::flag, 0, 0, 1, ""},
    {"SHOW_STATS", kind::flag, 0, 0, 1, ""},
    {"SHOW_ERRORS", kind::flag, 0, 0, 1, ""},
    {"PURGE_DELAY_MS", kind::number, 100, -1, day_ms, "milliseconds (-1: never)"},
    {"PURGE_DECOMMITS", kind::flag, 1, 0, 1, ""},
    {"LARGE_OS_PAGES", kind::flag, 0, 0, 1, ""},
    {"SECURE", kind::flag, STRATA_SECURE_BY_DEFAULT, 0, 1, ""},
    {"ARENA_RESERVE", kind::bytes, 0, 0, max_reserve, "bytes (K, M, G or T suffix)"},
    {"PURGE_THREAD", kind::flag, 1, 0, 1, ""},
    {"DEBUG", kind::flag, STRATA_DEBUG_BY_DEFAULT, 0, 1, ""},
    {"GUARDED_SAMPLE_RATE", kind::number, 0, 0, 1L << 40, "allocations (0: off)"},
    {"GUARDED_MAX_SLOTS", kind::number, 256, 1, 1L << 20, "slots"},
    {"GUARDED_UNDERFLOW_PERCENT", kind::number, 10, 0, 100, "percent"},
    {"PROFILE_RATE", kind::bytes, 512L << 10, 1, 1L << 40, "bytes (K, M, G or T suffix)"},
    {"PROFILE_SIGNAL", kind::number, 0, 0, 64, "signal number (0: none)"},
    {"PROFILE_LEAKS", kind::flag, 0, 0, 1, ""},
    {"PROFILE_SEED", kind::number, 0, 0, 1L << 62, "seed (0: per thread)"},
    {"GUARDED_MAX_COST", kind::number, 3, 0, 1000, "per mille of a thread's time (0: no limit)"},
    {"HUGE_PAGES_AFTER", kind::bytes, 4L << 20, 0, max_reserve, "bytes (K, M, G or T suffix)"},
};

// STRATA_* variables that are not options but are read by other parts of
// strata (the override's trace and report file, the CPU facade, the GPU
// allocator, the tools and scripts) or name build settings (CMake cache
// variables, compile-time macros) a user may export by mistake: none is unknown.
constexpr const char* other_variables[] = {
    "TRACE",          "STATS_FILE",        "CPU_BACKEND",
    "GPU_ALLOC_CONF", "GPU_ALLOC_LIBRARY", "REPLAY_PYTHON",
    "BENCH_PYTHON",   "BENCH_RENDERER",    "FUZZ_SECONDS",
    "TRACKING",       "OVERRIDE_PRELOAD",  "GPU_CHECK_BUDGET_S",
    "PROFILE",        "GPU_TRACE",
};

os::mutex init_lock;

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

// Whether `name` (up to its '=') is one of `other_variables`.
bool read_elsewhere(const char* name, std::size_t length) noexcept {
  for (const char* other : other_variables)
    if (std::strlen(other) == length && std::strncmp(name, other, length) == 0) return true;
  return false;
}

bool equals_ignore_case(const char* a, const char* b) noexcept {
  for (; *a != 0 && *b != 0; ++a, ++b) {
    char x = (*a >= 'A' && *a <= 'Z') ? static_cast<char>(*a - 'A' + 'a') : *a;
    if (x != *b) return false;
  }
  return *a == *b;
}

// A boolean: 0/1, true/false, yes/no, on/off in any case.
bool parse_flag(const char* text, long* out) noexcept {
  for (const char* yes : {"1", "true", "on", "yes"})
    if (equals_ignore_case(text, yes)) return *out = 1, true;
  for (const char* no : {"0", "false", "off", "no"})
    if (equals_ignore_case(text, no)) return *out = 0, true;
  return false;
}

// The shift of a size suffix (K, M, G, T, also KiB, MB, ...), or -1.
int suffix_shift(const char*& s) noexcept {
  int shift;
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
    case 't':
      shift = 40;
      break;
    default:
      return -1;
  }
  ++s;
  if ((*s | 0x20) == 'i') ++s;
  if ((*s | 0x20) == 'b') ++s;
  return shift;
}

// A decimal number, a size suffix for bytes, within the option's range.
bool parse_number(const descriptor& d, const char* text, long* out) noexcept {
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
    int shift = suffix_shift(s);
    if (shift < 0 || v > (LONG_MAX >> shift)) return false;
    v <<= shift;
  }
  if (*s != 0) return false;
  if (negative) v = -v;
  if (v < d.min_value || v > d.max_value) return false;
  *out = v;
  return true;
}

// Parse an option value; false when it is not valid for the option.
bool parse(const descriptor& d, const char* text, long* out) noexcept {
  return d.type == kind::flag ? parse_flag(text, out) : parse_number(d, text, out);
}

// A value of the option, a byte count in the largest of K, M, G, T that
// divides it ("64T"); without stdio.
void write_value(const descriptor& d, long v) noexcept {
  int shift = 0;
  if (d.type == kind::bytes)
    while (shift < 40 && v != 0 && (v & ((1L << (shift + 10)) - 1)) == 0) shift += 10;
  char digits[24];
  report_write(format_long(v >> shift, digits));
  if (shift != 0) report_write(&"KMGT"[shift / 10 - 1], 1);
}

// "strata: warning: STRATA_X=v: not <what the option accepts>; using the default, D".
void warn_bad_value(const descriptor& d, const char* entry) noexcept {
  char fallback[24];
  report_write("strata: warning: ");
  report_write(entry);
  if (d.type == kind::flag) {
    report_write(": not a boolean (0/1, true/false, yes/no, on/off)");
  } else {
    report_write(": not a number from ");
    write_value(d, d.min_value);
    report_write(" to ");
    write_value(d, d.max_value);
    report_write(" ");
    report_write(d.unit);
  }
  report_write("; using the default, ");
  report_write(format_long(d.default_value, fallback));
  report_write("\n");
}

void warn_unknown(const char* entry) noexcept {
  report_write("strata: warning: ");
  report_write(entry);
  report_write(
      ": not a strata variable (see the Configuration table in strata's README); "
      "ignored\n");
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
    if (read_elsewhere(name, len)) continue;
    int found = -1;
    for (int i = 0; i < STRATA_OPTION_COUNT; ++i)
      if (std::strlen(table[i].name) == len && std::strncmp(table[i].name, name, len) == 0)
        found = i;
    if (found < 0) {
      warn_unknown(entry);
      continue;
    }
    long v = 0;
    if (parse(table[found], eq + 1, &v))
      values[found].store(v, std::memory_order_relaxed);
    else
      warn_bad_value(table[found], entry);
  }
}

}  // namespace

void initialize() noexcept {
  std::lock_guard<os::mutex> guard(init_lock);
  if (initialized.load(std::memory_order_relaxed)) return;
  read_environment();
  initialized.store(true, std::memory_order_release);
  open_report_output();
  if (values[STRATA_OPTION_VERBOSE].load(std::memory_order_relaxed) != 0) print();
}

void reload_from_environment() noexcept {
  std::lock_guard<os::mutex> guard(init_lock);
  read_environment();
  initialized.store(true, std::memory_order_release);
  open_report_output();
}

void print() noexcept {
  for (int i = 0; i < STRATA_OPTION_COUNT; ++i) {
    char buf[24];
    report_write("strata: option STRATA_");
    report_write(table[i].name);
    report_write("=");
    report_write(format_long(values[i].load(std::memory_order_relaxed), buf));
    report_write("\n");
  }
}

}  // namespace strata::options

using namespace strata;

long strata_option_get(strata_option_t option) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT) {
    errno = EINVAL;
    return 0;
  }
  return options::get(option);
}

int strata_option_set(strata_option_t option, long value) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT || value < options::table[option].min_value ||
      value > options::table[option].max_value) {
    errno = EINVAL;
    return EINVAL;
  }
  if (!options::initialized.load(std::memory_order_acquire)) options::initialize();
  options::values[option].store(value, std::memory_order_relaxed);
  return 0;
}

const char* strata_option_name(strata_option_t option) noexcept {
  if (option < 0 || option >= STRATA_OPTION_COUNT) {
    errno = EINVAL;
    return nullptr;
  }
  return options::table[option].name;
}
