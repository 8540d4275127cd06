// strata GPU device layer: the one error type every backend throws.
//
// A device call that fails throws device_error carrying an errc: out_of_memory
// when the device (or its capacity limit, or an injected failure) cannot
// satisfy an allocation, invalid_argument for a bad pointer, handle or size,
// no_device when no device can be opened, capture for a call that is illegal
// while a stream is capturing (or a capture such a call invalidated),
// not_ready for a result the device has not reached yet (elapsed time of an
// event still queued), and backend for any other failure the backend reports
// (the message names the call and the backend's error).
#ifndef STRATA_GPU_ERROR_HPP
#define STRATA_GPU_ERROR_HPP

#include <stdexcept>
#include <string>

namespace strata::gpu {

enum class errc {
  out_of_memory,
  invalid_argument,
  no_device,
  capture,
  not_ready,
  backend,
};

class device_error : public std::runtime_error {
 public:
  // Keep the code beside the message so callers branch on it, never on text.
  device_error(errc code, const std::string& message)
      : std::runtime_error("strata gpu: " + message), code_(code) {}

  // Which kind of failure this was.
  errc code() const noexcept { return code_; }

  // The failure a caching allocator reacts to by freeing its cache and retrying.
  bool is_out_of_memory() const noexcept { return code_ == errc::out_of_memory; }

 private:
  errc code_;
};

}  // namespace strata::gpu

#endif
