// A test upstream over malloc that counts what it hands out and takes back.
#ifndef STRATA_TESTS_COUNTING_RESOURCE_HPP
#define STRATA_TESTS_COUNTING_RESOURCE_HPP

#include <strata/resource.hpp>

#include <cstddef>

namespace strata::test {

struct upstream_counts {
  std::size_t allocations = 0;
  std::size_t deallocations = 0;
  std::size_t live_bytes = 0;
  std::size_t releases = 0;
};

// Forwards to malloc_resource and tallies into a shared upstream_counts.
class counting_resource {
 public:
  explicit counting_resource(upstream_counts& counts) : counts_(&counts) {}

  void* allocate(std::size_t bytes, std::size_t alignment) {
    void* p = malloc_resource{}.allocate(bytes, alignment);
    ++counts_->allocations;
    counts_->live_bytes += bytes;
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    ++counts_->deallocations;
    counts_->live_bytes -= bytes;
    malloc_resource{}.deallocate(p, bytes, alignment);
  }
  bool is_equal(const counting_resource& other) const { return counts_ == other.counts_; }
  void release_unused() { ++counts_->releases; }

 private:
  upstream_counts* counts_;
};

}  // namespace strata::test

#endif
