// A trace turned into what a replay process executes: the records in global
// time order, each recorded address mapped to a dense slot number, so the
// worker holds its blocks in a flat array and does no lookup of its own. The
// plan also carries what the trace itself says: peak live bytes, threads,
// duration, and the calls it could not match.
#ifndef STRATA_REPLAY_PLAN_HPP
#define STRATA_REPLAY_PLAN_HPP

#include <cstdint>
#include <vector>

#include "strata/trace_format.hpp"

namespace strata_replay {

// What one replay step does with its slot.
enum class action : std::uint8_t { allocate, allocate_zeroed, allocate_aligned, resize, release };

struct step {
  std::uint64_t size;  // bytes asked for (allocations and resizes)
  std::uint32_t slot;  // the block's index in the worker's table
  action what;
  std::uint8_t alignment_log2;
  std::uint16_t reserved;
};
static_assert(sizeof(step) == 16);

struct plan {
  std::vector<step> steps;
  std::uint32_t slots = 0;            // most blocks live at once: the worker's table size
  std::uint64_t peak_live_bytes = 0;  // the most bytes asked for and not yet freed
  std::uint64_t records = 0;
  std::uint32_t threads = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t unknown_frees = 0;   // free or realloc of a block allocated before tracing
  std::uint64_t implicit_frees = 0;  // an address handed out again with no free recorded
  std::uint64_t failed_calls = 0;    // calls that returned no block
  std::uint64_t live_at_end = 0;     // blocks never freed
};

// Orders the records by time (each thread's own order kept) and builds the plan.
plan make_plan(std::vector<strata::trace::record> records);

}  // namespace strata_replay

#endif  // STRATA_REPLAY_PLAN_HPP
