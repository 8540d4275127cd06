// strata GPU caching allocator: the failure when the device is out of memory
// even after the cache was given back.
#ifndef STRATA_GPU_CACHING_OUT_OF_MEMORY_HPP
#define STRATA_GPU_CACHING_OUT_OF_MEMORY_HPP

#include <strata/gpu/error.hpp>

#include <cstddef>
#include <string>

namespace strata::gpu {

// The numbers a user needs to tell a leak from fragmentation, as PyTorch's
// message gives them.
struct out_of_memory_report {
  std::size_t requested = 0;     // bytes asked for
  std::size_t rounded = 0;       // bytes the block would have had
  std::size_t allocated = 0;     // bytes handed out
  std::size_t reserved = 0;      // bytes the segments hold
  std::size_t largest_free = 0;  // the largest free cached block
  double fragmentation = 0.0;    // share of free cached bytes outside the largest block
  std::size_t device_free = 0;   // what the device reports
  std::size_t device_total = 0;
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
