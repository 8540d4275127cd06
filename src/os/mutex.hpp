// A lock for the heap's slow paths: the OS's futex-based mutex without
// std::mutex's exceptions, so the malloc override needs no C++ runtime.
#pragma once

#include <pthread.h>

namespace strata::os {

// Lockable like std::mutex (std::lock_guard works); constant-initialised, so
// it is ready before any constructor runs. Locking a default pthread mutex
// cannot fail for a caller that does not already hold it.
class mutex {
 public:
  constexpr mutex() noexcept = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() noexcept { pthread_mutex_lock(&handle_); }
  bool try_lock() noexcept { return pthread_mutex_trylock(&handle_) == 0; }
  void unlock() noexcept { pthread_mutex_unlock(&handle_); }

 private:
  pthread_mutex_t handle_ = PTHREAD_MUTEX_INITIALIZER;
};

}  // namespace strata::os
