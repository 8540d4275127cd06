// The simulated device's host-function thread: CUDA runs every host function
// (cudaLaunchHostFunc) on one internal thread, one after another, so a host
// function that blocks holds the host functions of every stream, and one that
// calls the device is an error. A stream reaching a host function hands it
// here and waits until it has run.
#ifndef STRATA_GPU_SIMULATED_HOST_FUNCTIONS_HPP
#define STRATA_GPU_SIMULATED_HOST_FUNCTIONS_HPP

#include <strata/gpu/device.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace strata::gpu::simulated {

class host_function_thread {
 public:
  // What to do with the message of an exception a host function let out.
  using error_sink = std::function<void(const std::string&)>;

  host_function_thread();
  // Runs what is queued, then stops the thread.
  ~host_function_thread();
  host_function_thread(const host_function_thread&) = delete;
  host_function_thread& operator=(const host_function_thread&) = delete;

  // Run `work` on the host-function thread after everything handed over
  // before it, and return once it has run (the calling stream waits).
  void run(const host_work& work, const error_sink& on_error);

  // Whether the calling thread is running a host function now.
  static bool inside() noexcept;

 private:
  struct job {
    const host_work* work;
    const error_sink* on_error;
    std::uint64_t ticket;
  };

  void serve();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable done_;
  std::deque<job> jobs_;
  std::uint64_t issued_ = 0;
  std::uint64_t finished_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::gpu::simulated

#endif
