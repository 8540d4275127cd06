#include "host_functions.hpp"

#include <exception>

namespace strata::gpu::simulated {

namespace {

// Set on the host-function thread while a host function runs.
thread_local bool running_host_function = false;

}  // namespace

host_function_thread::host_function_thread() : thread_([this] { serve(); }) {}

host_function_thread::~host_function_thread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

// Tickets are handed out in arrival order, so jobs finish in that order.
void host_function_thread::run(const host_work& work, const error_sink& on_error) {
  std::unique_lock lock(mutex_);
  const std::uint64_t ticket = ++issued_;
  jobs_.push_back(job{&work, &on_error, ticket});
  ready_.notify_one();
  done_.wait(lock, [&] { return finished_ >= ticket; });
}

bool host_function_thread::inside() noexcept {
  return running_host_function;
}

// One job at a time; an exception becomes a message for the device to report
// at its next synchronisation, as CUDA reports errors of asynchronous work.
void host_function_thread::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;
    const job next = jobs_.front();
    jobs_.pop_front();
    lock.unlock();
    running_host_function = true;
    try {
      (*next.work)();
    } catch (const std::exception& e) {
      (*next.on_error)(std::string("a host function threw: ") + e.what());
    } catch (...) {
      (*next.on_error)("a host function threw a non-standard exception");
    }
    running_host_function = false;
    lock.lock();
    finished_ = next.ticket;
    done_.notify_all();
  }
}

}  // namespace strata::gpu::simulated
