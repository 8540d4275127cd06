// The replay process: runs a plan's steps with whatever malloc the process has
// (the allocator under test is preloaded into it) and measures the replay.
#ifndef STRATA_REPLAY_WORKER_HPP
#define STRATA_REPLAY_WORKER_HPP

#include <cstdint>

namespace strata_replay {

struct replay_result {
  std::uint64_t time_ns = 0;          // wall time of the steps
  std::uint64_t peak_rss_bytes = 0;   // peak resident memory the replay added
  std::uint64_t peak_live_bytes = 0;  // the most bytes the replay held at once
  std::uint64_t failures = 0;         // allocations the allocator refused
};

// Replays the steps readable from `fd` with a table of `slots` blocks and
// prints the result as one line on standard output; returns the exit code.
int run_worker(int fd, std::uint32_t slots);

}  // namespace strata_replay

#endif  // STRATA_REPLAY_WORKER_HPP
