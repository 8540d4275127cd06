// The ledger's C API (strata.h).
#include <strata/strata.h>
#include <strata/ledger.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace strata {
namespace {

// The ledger in `format`, or false for a format there is not.
bool render(int format, std::string& out) {
  if (format < STRATA_LEDGER_TEXT || format > STRATA_LEDGER_HTML) return false;
  memory_ledger ledger = memory_ledger::take();
  out = format == STRATA_LEDGER_TEXT   ? ledger.text()
        : format == STRATA_LEDGER_JSON ? ledger.json()
                                       : ledger.html();
  return true;
}

}  // namespace

}  // namespace strata

using namespace strata;

int strata_ledger_totals(strata_ledger_totals_t* out) noexcept {
  if (out == nullptr) {
    errno = EINVAL;
    return -1;
  }
  memory_ledger ledger = memory_ledger::take();
  std::memset(out, 0, sizeof(*out));
  out->resources = ledger.rows().size();
  out->heap_in_use = ledger.heap().in_use;
  out->heap_committed = ledger.heap().committed;
  out->host_held = ledger.total_held(ledger_domain::host);
  out->device_held = ledger.total_held(ledger_domain::device);
  out->managed_held = ledger.total_held(ledger_domain::managed);
  out->pinned_held = ledger.total_held(ledger_domain::pinned);
  for (const ledger_device_row& d : ledger.devices()) {
    out->device_total += d.memory.total;
    out->device_free += d.memory.free;
    out->device_outside += d.outside;
  }
  return 0;
}

size_t strata_ledger_write(int format, char* buffer, size_t capacity) noexcept {
  std::string text;
  if (!render(format, text) || (buffer == nullptr && capacity != 0)) {
    errno = EINVAL;
    return 0;
  }
  if (capacity != 0) {
    std::size_t length = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(buffer, text.data(), length);
    buffer[length] = '\0';
  }
  return text.size();
}

int strata_ledger_print(FILE* out, int format) noexcept {
  std::string text;
  if (!render(format, text)) {
    errno = EINVAL;
    return -1;
  }
  if (out == nullptr) out = stderr;
  return std::fwrite(text.data(), 1, text.size(), out) == text.size() ? 0 : -1;
}
