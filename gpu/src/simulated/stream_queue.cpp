#include "stream_queue.hpp"

#include <utility>

namespace strata::gpu::simulated {

// Start the worker at once so queued work runs without any host call.
stream_queue::stream_queue(std::uint64_t id) : id_(id), worker_([this] { run(); }) {}

// Destroying a stream must not drop work already queued on it (CUDA's rule).
stream_queue::~stream_queue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  worker_.join();
}

// Positions are handed out under the lock so they follow queue order exactly.
std::uint64_t stream_queue::push(std::function<void()> work) {
  std::uint64_t position;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    position = ++enqueued_;
  }
  work_ready_.notify_one();
  return position;
}

// Lets a caller mark "everything queued so far" without queueing anything.
std::uint64_t stream_queue::last_position() {
  std::lock_guard lock(mutex_);
  return enqueued_;
}

// The non-blocking completion test behind event queries and pool reuse.
bool stream_queue::reached(std::uint64_t position) {
  std::lock_guard lock(mutex_);
  return done_ >= position;
}

// The blocking completion test behind synchronisation and stream waits.
void stream_queue::wait_for(std::uint64_t position) {
  std::unique_lock lock(mutex_);
  progress_.wait(lock, [&] { return done_ >= position; });
}

// The worker: run items in order, publishing progress after each one; an item
// is destroyed before its position is reached, so nothing it holds outlives it.
void stream_queue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    work = nullptr;
    lock.lock();
    ++done_;
    progress_.notify_all();
  }
}

}  // namespace strata::gpu::simulated
