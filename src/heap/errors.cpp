// Errors the heap reports: detected corruption (one line, then abort) and,
// with STRATA_SHOW_ERRORS, each allocation it refuses (one line, then NULL).
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heap/heap_internal.hpp"
#include "options/options.hpp"
#include "options/report_output.hpp"

namespace strata::heap {

namespace {
// One line to the report output with write(2): no stdio buffer, no allocation.
void write_line(const char* line, int length) {
  if (length <= 0) return;
  options::report_write(line, static_cast<std::size_t>(length));
}
}  // namespace

void* allocation_error(int error, const char* call, std::size_t size, std::size_t alignment) {
  if (options::get(STRATA_OPTION_SHOW_ERRORS) != 0) {
    char line[200];
    int n = alignment == 0
                ? std::snprintf(line, sizeof(line), "strata: error: %s(%zu): %s\n", call, size,
                                std::strerror(error))
                : std::snprintf(line, sizeof(line), "strata: error: %s(%zu, alignment %zu): %s\n",
                                call, size, alignment, std::strerror(error));
    write_line(line, n < static_cast<int>(sizeof(line)) ? n : static_cast<int>(sizeof(line)) - 1);
  }
  errno = error;
  return nullptr;
}

void heap_corruption(const char* what, const void* p) {
  char line[160];
  int n = std::snprintf(line, sizeof(line), "strata: heap corruption: %s (pointer %p)\n", what, p);
  write_line(line, n);
  std::abort();
}

void heap_corruption_at(const char* what, const page* pg, const void* p) {
  char line[256];
  int n;
  if (pg->slice_count != 0 && pg->size_class < class_count)
    n = std::snprintf(
        line, sizeof(line),
        "strata: heap corruption: %s (pointer %p, in a page of %zu-byte blocks at %p)\n", what, p,
        pg->block_size, static_cast<const void*>(pg->area));
  else if (pg->slice_count != 0)
    n = std::snprintf(line, sizeof(line),
                      "strata: heap corruption: %s (pointer %p, huge block of %zu bytes at %p)\n",
                      what, p, pg->block_size, static_cast<const void*>(pg->area));
  else
    n = std::snprintf(line, sizeof(line),
                      "strata: heap corruption: %s (pointer %p, not inside a live page)\n", what,
                      p);
  write_line(line, n);
  std::abort();
}

}  // namespace strata::heap
