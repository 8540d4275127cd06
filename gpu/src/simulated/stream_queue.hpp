// The simulated stream: an ordered queue of work run by one worker thread.
// Every queued item gets a position (1, 2, ...); a position is reached once
// that item and everything before it have run.
#ifndef STRATA_GPU_SIMULATED_STREAM_QUEUE_HPP
#define STRATA_GPU_SIMULATED_STREAM_QUEUE_HPP

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace strata::gpu::simulated {

class stream_queue {
 public:
  explicit stream_queue(std::uint64_t id);
  // Lets the queued work finish, then stops the worker.
  ~stream_queue();
  stream_queue(const stream_queue&) = delete;
  stream_queue& operator=(const stream_queue&) = delete;

  std::uint64_t id() const noexcept { return id_; }

  // Queue `work` behind everything queued so far; returns its position.
  std::uint64_t push(std::function<void()> work);
  // The position of the latest queued item (0 when none was ever queued).
  std::uint64_t last_position();
  bool reached(std::uint64_t position);
  // Block the calling thread until `position` is reached.
  void wait_for(std::uint64_t position);

 private:
  void run();

  const std::uint64_t id_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable progress_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t done_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace strata::gpu::simulated

#endif
