// Errors the heap reports: detected corruption (one line, then abort) and,
// with STRATA_SHOW_ERRORS, each allocation it refuses (one line, then NULL).
#include <sys/uio.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heap/heap_internal.hpp"
#include "options/options.hpp"
#include "options/report_output.hpp"
#include "strata/detail/arena_signature.hpp"

namespace strata::heap {

namespace {
// One line to the report output with write(2): no stdio buffer, no allocation.
void write_line(const char* line, int length) {
  if (length <= 0) return;
  options::report_write(line, static_cast<std::size_t>(length));
}
// Appended to a report about a pointer that lies in an arena's chunk.
constexpr const char* arena_note =
    "; it points into a chunk of a strata arena (monotonic_arena, frame_allocator or "
    "session_heap), whose blocks go back all at once (reset, end_frame, destroy), never by free";

// Whether the heap block `p` falls in starts with an arena chunk's signature.
// The block's start may be memory the heap keeps inaccessible (a guard page,
// the trimmed front of an over-aligned huge block), so it is read by a system
// call that fails there rather than by a load that would fault: the report
// must come out whole.
bool in_arena_chunk(const page* pg, const void* p) {
  const auto* at = static_cast<const std::uint8_t*>(p);
  if (pg->slice_count == 0 || pg->block_size == 0 || at < pg->area) return false;
  std::size_t index = static_cast<std::size_t>(at - pg->area) / pg->block_size;
  if (pg->size_class < class_count && index >= pg->reserved) return false;
  std::uint64_t first_word = 0;
  iovec local{&first_word, sizeof first_word};
  iovec remote{pg->area + index * pg->block_size, sizeof first_word};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof first_word) &&
         first_word == detail::arena_chunk_signature;
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
  char line[512];
  const char* owner = in_arena_chunk(pg, p) ? arena_note : "";
  int n;
  if (pg->slice_count != 0 && pg->size_class < class_count)
    n = std::snprintf(
        line, sizeof(line),
        "strata: heap corruption: %s (pointer %p, in a page of %zu-byte blocks at %p)%s\n", what, p,
        pg->block_size, static_cast<const void*>(pg->area), owner);
  else if (pg->slice_count != 0)
    n = std::snprintf(line, sizeof(line),
                      "strata: heap corruption: %s (pointer %p, huge block of %zu bytes at %p)%s\n",
                      what, p, pg->block_size, static_cast<const void*>(pg->area), owner);
  else
    n = std::snprintf(line, sizeof(line),
                      "strata: heap corruption: %s (pointer %p, not inside a live page)\n", what,
                      p);
  write_line(line, n);
  std::abort();
}

}  // namespace strata::heap
