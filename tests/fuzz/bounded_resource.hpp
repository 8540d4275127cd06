// The upstream of the fuzzed allocators: malloc, refusing with std::bad_alloc
// what would take a run past its budget (AddressSanitizer's malloc aborts on
// impossible sizes rather than failing), so running out is fuzzed too.
#ifndef STRATA_FUZZ_BOUNDED_RESOURCE_HPP
#define STRATA_FUZZ_BOUNDED_RESOURCE_HPP

#include <strata/resource.hpp>

#include <cstddef>
#include <new>

namespace strata::fuzz {

class bounded_resource {
 public:
  static constexpr std::size_t budget = std::size_t{64} << 20;

  // A block from malloc while the budget lasts; std::bad_alloc after.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (bytes > budget - held_ || alignment > budget) throw std::bad_alloc();
    void* p = malloc_resource{}.allocate(bytes, alignment);
    held_ += bytes;
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    held_ -= bytes;
    malloc_resource{}.deallocate(p, bytes, alignment);
  }
  bool is_equal(const bounded_resource& other) const noexcept { return this == &other; }
  std::size_t held() const noexcept { return held_; }

 private:
  std::size_t held_ = 0;
};

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_BOUNDED_RESOURCE_HPP
