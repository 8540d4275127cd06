// The synchronized adaptor: one lock around a resource that is not thread-safe
// (an arena, a pool, a bfc), so threads may share it.
//
// synchronized<Upstream, Mutex> takes the lock (std::mutex by default; any
// type with lock() and unlock()) around every call. The upstream's other
// operations are reached through with_lock(). `no_lock` is the lock for an
// adaptor that takes a Lock parameter (tracking) and is used by one thread.
#ifndef STRATA_SYNCHRONIZED_HPP
#define STRATA_SYNCHRONIZED_HPP

#include <strata/no_lock.hpp>
#include <strata/resource.hpp>

#include <cstddef>
#include <mutex>
#include <utility>

namespace strata {

template <host_resource Upstream, class Mutex = std::mutex>
class synchronized {
 public:
  synchronized() requires std::default_initializable<Upstream>
  = default;
  explicit synchronized(Upstream upstream) : upstream_(std::move(upstream)) {}
  synchronized(const synchronized&) = delete;
  synchronized& operator=(const synchronized&) = delete;

  // Allocate under the lock.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    std::lock_guard lock(mutex_);
    return upstream_.allocate(bytes, alignment);
  }
  // Free under the lock.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    std::lock_guard lock(mutex_);
    upstream_.deallocate(p, bytes, alignment);
  }
  bool is_equal(const synchronized& other) const noexcept { return this == &other; }
  // Release under the lock.
  void release_unused() requires releasing_resource<Upstream> {
    std::lock_guard lock(mutex_);
    upstream_.release_unused();
  }

  // Run `f(upstream)` under the lock: statistics, trims, resets.
  template <class F>
  decltype(auto) with_lock(F&& f) {
    std::lock_guard lock(mutex_);
    return std::forward<F>(f)(upstream_);
  }

 private:
  Mutex mutex_;
  Upstream upstream_{};
};

}  // namespace strata

#endif  // STRATA_SYNCHRONIZED_HPP
