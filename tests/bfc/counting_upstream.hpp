// A test upstream over malloc that counts the regions it hands out and takes
// back, and can be told to refuse requests above a size.
#ifndef STRATA_TESTS_COUNTING_UPSTREAM_HPP
#define STRATA_TESTS_COUNTING_UPSTREAM_HPP

#include <strata/resource.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>

namespace strata::test {

// What the upstream saw; shared by reference so the copies a resource keeps
// report to the test.
struct upstream_log {
  std::size_t allocations = 0;
  std::size_t deallocations = 0;
  std::size_t live_bytes = 0;
  std::size_t refuse_above = SIZE_MAX;         // requests larger than this throw
  std::map<std::uintptr_t, std::size_t> live;  // address -> bytes
};

class counting_upstream {
 public:
  explicit counting_upstream(upstream_log& log) noexcept : log_(&log) {}

  // A block from malloc, unless it is larger than the log allows.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    if (bytes > log_->refuse_above) throw std::bad_alloc();
    void* p = malloc_resource{}.allocate(bytes, alignment);
    ++log_->allocations;
    log_->live_bytes += bytes;
    log_->live[reinterpret_cast<std::uintptr_t>(p)] = bytes;
    return p;
  }
  // Give a block back, checking it is one handed out with this size.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    auto it = log_->live.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == log_->live.end() || it->second != bytes) std::abort();
    log_->live.erase(it);
    ++log_->deallocations;
    log_->live_bytes -= bytes;
    malloc_resource{}.deallocate(p, bytes, alignment);
  }
  bool is_equal(const counting_upstream& other) const noexcept { return log_ == other.log_; }

 private:
  upstream_log* log_;
};

}  // namespace strata::test

#endif  // STRATA_TESTS_COUNTING_UPSTREAM_HPP
