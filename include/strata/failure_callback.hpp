// The failure-callback adaptor: when the upstream runs out of memory, ask the
// program to free some (drop caches, trim pools) and try again.
//
// failure_callback<Upstream> catches std::bad_alloc from the upstream and calls
// `callback(bytes, alignment, attempt)` (attempt 0, 1, ...). When it returns
// true and fewer than `max_retries` retries were made, the allocation is tried
// again; otherwise the last std::bad_alloc propagates. Bad alignments
// (std::invalid_argument) are never retried.
#ifndef STRATA_FAILURE_CALLBACK_HPP
#define STRATA_FAILURE_CALLBACK_HPP

#include <strata/resource.hpp>

#include <cstddef>
#include <functional>
#include <new>
#include <utility>

namespace strata {

// What the callback is: may free memory, returns whether a retry may succeed.
using allocation_failure_handler =
    std::function<bool(std::size_t bytes, std::size_t alignment, int attempt)>;

template <host_resource Upstream, class Callback = allocation_failure_handler>
class failure_callback {
 public:
  failure_callback(Callback callback, int max_retries) requires std::default_initializable<Upstream>
      : callback_(std::move(callback)), max_retries_(max_retries) {}
  failure_callback(Upstream upstream, Callback callback, int max_retries)
      : upstream_(std::move(upstream)), callback_(std::move(callback)), max_retries_(max_retries) {}

  // Allocate; on std::bad_alloc let the callback free memory and retry, at most
  // max_retries times, then rethrow.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    for (int attempt = 0;; ++attempt) {
      try {
        return upstream_.allocate(bytes, alignment);
      } catch (const std::bad_alloc&) {
        if (attempt >= max_retries_ || !callback_(bytes, alignment, attempt)) throw;
        ++retries_;
      }
    }
  }
  // Straight to the upstream.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    upstream_.deallocate(p, bytes, alignment);
  }
  bool is_equal(const failure_callback& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // Retries made so far (callback calls that asked for one).
  std::size_t retries() const noexcept { return retries_; }
  Upstream& upstream() noexcept { return upstream_; }

 private:
  [[no_unique_address]] Upstream upstream_{};
  Callback callback_;
  int max_retries_;
  std::size_t retries_ = 0;
};

}  // namespace strata

#endif  // STRATA_FAILURE_CALLBACK_HPP
