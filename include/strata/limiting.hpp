// The limiting adaptor: a byte cap on what an upstream may have handed out.
//
// limiting<Upstream> counts the bytes of its live blocks; a request that would
// take them over the cap throws strata::limit_exceeded (a std::bad_alloc whose
// what() names the request, the bytes in use and the cap) without calling the
// upstream. Freed blocks give their bytes back. The count is one atomic, so
// threads may share the adaptor when the upstream is thread-safe.
#ifndef STRATA_LIMITING_HPP
#define STRATA_LIMITING_HPP

#include <strata/resource.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <new>
#include <utility>

namespace strata {

// The exception of a request over a limiting adaptor's cap.
class limit_exceeded : public std::bad_alloc {
 public:
  // Format the message once, so what() cannot fail.
  limit_exceeded(std::size_t requested, std::size_t in_use, std::size_t cap) noexcept
      : requested_(requested), in_use_(in_use), cap_(cap) {
    std::snprintf(what_, sizeof what_,
                  "strata limiting: %zu bytes requested with %zu in use would exceed the cap of "
                  "%zu bytes",
                  requested, in_use, cap);
  }
  const char* what() const noexcept override { return what_; }
  std::size_t requested() const noexcept { return requested_; }
  std::size_t in_use() const noexcept { return in_use_; }
  std::size_t cap() const noexcept { return cap_; }

 private:
  std::size_t requested_, in_use_, cap_;
  char what_[160];
};

template <host_resource Upstream>
class limiting {
 public:
  explicit limiting(std::size_t cap) requires std::default_initializable<Upstream> : cap_(cap) {}
  limiting(Upstream upstream, std::size_t cap) : upstream_(std::move(upstream)), cap_(cap) {}
  limiting(const limiting&) = delete;
  limiting& operator=(const limiting&) = delete;

  // Reserve the bytes under the cap, then allocate; the reservation is undone
  // when the upstream throws.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    std::size_t in_use = in_use_.load(std::memory_order_relaxed);
    do {
      if (bytes > cap_ || in_use > cap_ - bytes) [[unlikely]]
        throw limit_exceeded(bytes, in_use, cap_);
    } while (!in_use_.compare_exchange_weak(in_use, in_use + bytes, std::memory_order_relaxed));
    try {
      return upstream_.allocate(bytes, alignment);
    } catch (...) {
      in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
  }

  // Return the block and its bytes to the cap.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    upstream_.deallocate(p, bytes, alignment);
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  bool is_equal(const limiting& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  std::size_t cap() const noexcept { return cap_; }
  std::size_t bytes_in_use() const noexcept { return in_use_.load(std::memory_order_relaxed); }
  Upstream& upstream() noexcept { return upstream_; }

 private:
  [[no_unique_address]] Upstream upstream_{};
  std::size_t cap_;
  std::atomic<std::size_t> in_use_{0};
};

}  // namespace strata

#endif  // STRATA_LIMITING_HPP
