// Memory freed while queued work may still touch it. CUDA's synchronous frees
// do not wait for the device, so the simulator does not either; instead it
// holds the memory back, filled with a poison byte, until every stream has
// passed the point where it was freed. Queued copies and memsets that touch
// held memory when they run are reported, and at release the poison is checked:
// a byte changed means queued work wrote the memory after its free.
#ifndef STRATA_GPU_SIMULATED_QUARANTINE_HPP
#define STRATA_GPU_SIMULATED_QUARANTINE_HPP

#include "stream_queue.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace strata::gpu::simulated {

// The position each stream had reached in its queue when something happened.
struct queue_position {
  std::shared_ptr<stream_queue> queue;
  std::uint64_t at;
};
using frontier = std::vector<queue_position>;

// Whether every stream of `f` has run what was queued up to its position.
bool passed(const frontier& f);

class quarantine {
 public:
  static constexpr unsigned char poison = 0xF5;

  // Hold [p, p + bytes) until every stream of `pending` has passed its
  // position, then call `release`. `poisoned` memory is filled now and checked
  // then; `what` names the free in reports.
  void hold(void* p, std::size_t bytes, bool poisoned, frontier pending,
            std::function<void()> release, std::string what);

  // The free that [p, p + bytes) overlaps, if it touches held memory.
  std::optional<std::string> overlapping(const void* p, std::size_t bytes) const;

  // Release what every stream has passed (all of it with `everything`, once
  // the caller has waited for the device); a message for each block whose
  // poison was overwritten.
  std::vector<std::string> reap(bool everything);

  bool empty() const;

 private:
  struct held {
    std::size_t bytes;
    bool poisoned;
    frontier pending;
    std::function<void()> release;
    std::string what;
  };

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, held> held_;  // start -> block
};

}  // namespace strata::gpu::simulated

#endif
