// strata GPU caching allocator: the what-if replay. A device trace (the
// allocator's own, STRATA_GPU_TRACE; or a PyTorch memory snapshot converted
// by tools/strata-replay/torch_snapshot_to_trace.py) is replayed, its
// allocations and frees in order, by a caching allocator with another
// configuration over an address-only simulated device, which says what that
// configuration would have reserved and whether it would have run out.
// strata-replay --gpu and the out-of-memory report are built on it.
#ifndef STRATA_GPU_CACHING_REPLAY_HPP
#define STRATA_GPU_CACHING_REPLAY_HPP

#include <strata/gpu/caching/config.hpp>
#include <strata/trace_format.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::gpu {

struct replay_options {
  // The simulated device's memory (80 GB: an H100's, in address-only memory).
  std::size_t device_memory = std::size_t{80} << 30;
  // Samples of the reserved and allocated bytes kept for a plot (0: none).
  std::size_t timeline_points = 0;
};

// The reserved and allocated bytes after record `event`.
struct replay_sample {
  std::uint64_t event = 0;
  std::size_t reserved = 0;
  std::size_t allocated = 0;
};

struct replay_result {
  std::size_t peak_reserved = 0;   // the most bytes the segments held at once
  std::size_t peak_allocated = 0;  // the most bytes handed out at once (rounded blocks)
  // At the peak of reserved: the share of reserved bytes not handed out.
  double fragmentation_at_peak = 0.0;
  std::uint64_t device_allocations = 0;  // segments taken from the device (cudaMalloc calls)
  bool out_of_memory = false;            // an allocation failed; the replay stopped there
  std::uint64_t oom_record = 0;          // the index of the record that failed
  std::size_t oom_bytes = 0;             // the bytes it asked for
  std::uint64_t replayed = 0;            // allocations and frees replayed
  std::uint64_t unmatched_frees = 0;     // frees of blocks allocated before the trace began
  std::vector<replay_sample> timeline;
};

// What the trace itself records, without a replay.
struct recorded_summary {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t ooms = 0;
  std::uint64_t device_allocations = 0;  // segment_alloc records
  std::size_t peak_reserved = 0;         // from segment_alloc and segment_free
  std::size_t peak_requested = 0;        // from alloc and free_requested (bytes asked for)
  std::size_t streams = 0;
};

recorded_summary summarize(const std::vector<trace::device_record>& records);

// Replay the alloc, free_requested and oom records (an oom is tried again and,
// when it fits, freed at once) with a caching allocator of `config` (its trace
// ring and file turned off). Each stream of the trace is a stream of the
// simulated device (the null handle its legacy stream). Records of every
// device are replayed on the one device: filter them first.
replay_result replay(const std::vector<trace::device_record>& records, const caching_config& config,
                     const replay_options& options = {});

}  // namespace strata::gpu

#endif
