// The aligned adaptor: alignments above what an upstream can give.
//
// aligned<Upstream, Natural> passes requests aligned to at most `Natural`
// (what the upstream honours, e.g. 256 for a device allocator) straight
// through. A larger alignment is served by asking the upstream for
// bytes + alignment - Natural at `Natural` and rounding the address up. The
// offset back to the upstream's block is kept in a side table keyed by the
// returned address, never in the block, since the memory may not be touchable
// by the host. The side table has a mutex, taken on over-aligned calls only.
#ifndef STRATA_ALIGNED_HPP
#define STRATA_ALIGNED_HPP

#include <strata/resource.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace strata {

template <host_resource Upstream, std::size_t Natural = default_alignment>
class aligned {
  static_assert(is_valid_alignment(Natural), "the natural alignment must be a power of two");

 public:
  aligned() requires std::default_initializable<Upstream>
  = default;
  explicit aligned(Upstream upstream) : upstream_(std::move(upstream)) {}
  aligned(const aligned&) = delete;
  aligned& operator=(const aligned&) = delete;

  // Pass small alignments through; over-allocate for large ones and remember
  // the offset beside the block.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    if (alignment <= Natural) return upstream_.allocate(bytes, alignment);
    const std::size_t slack = alignment - Natural;
    if (bytes > SIZE_MAX - slack) [[unlikely]]
      detail::throw_bad_alloc();
    void* raw = upstream_.allocate(bytes + slack, Natural);
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t address = align_up(start, alignment);
    try {
      std::lock_guard lock(mutex_);
      offsets_.emplace(address, address - start);
    } catch (...) {
      upstream_.deallocate(raw, bytes + slack, Natural);
      throw;
    }
    return reinterpret_cast<void*>(address);
  }

  // Find the block's offset, forget it, and free the upstream's block.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    if (alignment <= Natural) {
      upstream_.deallocate(p, bytes, alignment);
      return;
    }
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(p);
    std::size_t offset;
    {
      std::lock_guard lock(mutex_);
      const auto found = offsets_.find(address);
      if (found == offsets_.end()) [[unlikely]]
        detail::report_misuse("free of an over-aligned block this adaptor did not hand out",
                              "strata::aligned::deallocate", p);
      offset = found->second;
      offsets_.erase(found);
    }
    upstream_.deallocate(reinterpret_cast<void*>(address - offset), bytes + alignment - Natural,
                         Natural);
  }

  bool is_equal(const aligned& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // Over-aligned blocks live now (entries in the side table).
  std::size_t over_aligned_blocks() const {
    std::lock_guard lock(mutex_);
    return offsets_.size();
  }
  Upstream& upstream() noexcept { return upstream_; }

 private:
  [[no_unique_address]] Upstream upstream_{};
  mutable std::mutex mutex_;
  std::unordered_map<std::uintptr_t, std::size_t> offsets_;
};

}  // namespace strata

#endif  // STRATA_ALIGNED_HPP
