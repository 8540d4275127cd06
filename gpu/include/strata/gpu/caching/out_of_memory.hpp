// strata GPU caching allocator: the failure when the device is out of memory
// even after the cache was given back.
#ifndef STRATA_GPU_CACHING_OUT_OF_MEMORY_HPP
#define STRATA_GPU_CACHING_OUT_OF_MEMORY_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::gpu {

// A free cached block.
struct free_block {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  stream on;  // the stream it is cached with
};

// A segment holding free bytes it cannot give back, since blocks of it are in use.
struct stranded_segment {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t stranded = 0;  // its free bytes
};

// The numbers a user needs to tell a leak from fragmentation, as PyTorch's
// message gives them, and what would have avoided the failure.
struct out_of_memory_report {
  std::size_t requested = 0;     // bytes asked for
  std::size_t rounded = 0;       // bytes the block would have had
  std::size_t allocated = 0;     // bytes handed out
  std::size_t reserved = 0;      // bytes the segments hold
  std::size_t largest_free = 0;  // the largest free cached block
  double fragmentation = 0.0;    // share of free cached bytes outside the largest block
  std::size_t device_free = 0;   // what the device reports
  std::size_t device_total = 0;
  std::vector<free_block> largest_free_blocks;  // the largest few, largest first
  std::vector<stranded_segment> stranded;       // the most stranded segments first
  // A STRATA_GPU_ALLOC_CONF change under which a replay of the trace ring
  // (caching/replay.hpp; the blocks live before the ring's oldest entry are
  // allocated first) serves this request, the one of the lowest peak reserved
  // among those tried; empty when none does, or the replay under the current
  // configuration does not run out (the ring does not reach back far enough).
  std::string avoided_by;
  std::size_t replayed_actions = 0;  // the ring entries that replay used
};

class out_of_memory_error : public device_error {
 public:
  // `snapshot_json` is the allocator's snapshot when it failed.
  out_of_memory_error(const out_of_memory_report& report, std::string snapshot_json);

  const out_of_memory_report& report() const noexcept { return report_; }
  const std::string& snapshot_json() const noexcept { return snapshot_json_; }

 private:
  out_of_memory_report report_;
  std::string snapshot_json_;
};

}  // namespace strata::gpu

#endif
