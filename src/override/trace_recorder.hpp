// STRATA_TRACE: the override records every allocator call of the program into
// a trace file (include/strata/trace_format.hpp). Each entry point tests `on()`
// (one relaxed load and a branch not taken while tracing is off) and, when it
// is on, goes through its recording twin, which calls record().
#ifndef STRATA_OVERRIDE_TRACE_RECORDER_HPP
#define STRATA_OVERRIDE_TRACE_RECORDER_HPP

#include <cstddef>

#include "strata/trace_format.hpp"

namespace strata::trace_recorder {

// Set before the program's threads start (the override's constructor) and
// cleared only by a forked child or after a failed write: a plain flag, so
// that the test compiles to one compare of memory with zero and one branch.
extern bool enabled __attribute__((visibility("hidden")));

// Whether calls are being recorded: the only thing the fast paths pay.
inline bool on() noexcept {
  return enabled;
}

// Appends one record for the calling thread; `alignment` 0 for unaligned calls.
void record(trace::op kind, const void* address, std::size_t size,
            const void* old_address = nullptr, std::size_t alignment = 0) noexcept;

// The recording twins of malloc and free, out of line so that the fast paths
// keep nothing of the recording but the test of on(). malloc's twin is also
// the override's sampled malloc (heap/sampling.hpp), and records only when on().
void* malloc_recorded(std::size_t size) noexcept;
// The same for operator new: `retry` (the new-handler loop, which records what
// it finds) when the heap has no block.
void* new_recorded(std::size_t size, void* (*retry)(std::size_t));
void free_recorded(void* p) noexcept;

// Opens the file STRATA_TRACE names and turns recording on (the override's
// constructor calls it once).
void start() noexcept;

}  // namespace strata::trace_recorder

#endif  // STRATA_OVERRIDE_TRACE_RECORDER_HPP
