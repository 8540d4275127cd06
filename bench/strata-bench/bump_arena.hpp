// A plain bump arena, the seed 004's "bumpalo" baseline: one fixed buffer from malloc,
// a cursor aligned up per request, reset by moving the cursor back. No growth, no
// statistics, no thread lookup: the floor any frame allocator is measured against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace strata_bench {

class bump_arena {
 public:
  explicit bump_arena(std::size_t capacity)
      : start_(static_cast<char*>(std::malloc(capacity))),
        cursor_(start_),
        end_(start_ + capacity) {
    if (start_ == nullptr) throw std::bad_alloc();
  }
  ~bump_arena() { std::free(start_); }
  bump_arena(const bump_arena&) = delete;
  bump_arena& operator=(const bump_arena&) = delete;

  // `bytes` aligned to `alignment` (a power of two); std::bad_alloc when full.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    const auto address = reinterpret_cast<std::uintptr_t>(cursor_);
    const std::uintptr_t block = (address + alignment - 1) & ~(alignment - 1);
    if (block + bytes > reinterpret_cast<std::uintptr_t>(end_)) [[unlikely]]
      throw std::bad_alloc();
    cursor_ = reinterpret_cast<char*>(block + bytes);
    return reinterpret_cast<void*>(block);
  }

  // Frees everything at once.
  void reset() { cursor_ = start_; }

 private:
  char* start_;
  char* cursor_;
  char* end_;
};

}  // namespace strata_bench
