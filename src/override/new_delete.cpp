// Every form of C++ operator new and delete, on the strata heap. Failure runs
// the installed new_handler and retries, then throws std::bad_alloc (or
// returns null for the nothrow forms), as the standard library does.
#include <new>

#include "heap/heap.hpp"
#include "strata/strata.h"

namespace {

using namespace strata;

// Call the new_handler until an allocation succeeds; false when there is none.
bool run_new_handler() {
  std::new_handler handler = std::get_new_handler();
  if (handler == nullptr) return false;
  handler();
  return true;
}

__attribute__((noinline)) void* new_retry(std::size_t size, std::size_t alignment, bool nothrow) {
  for (;;) {
    void* p = alignment != 0 ? strata_malloc_aligned(size, alignment) : strata_malloc(size);
    if (p != nullptr) return p;
    bool retried;
    try {
      retried = run_new_handler();
    } catch (...) {
      if (nothrow) return nullptr;
      throw;
    }
    if (!retried) {
      if (nothrow) return nullptr;
      throw std::bad_alloc();
    }
  }
}

inline void* new_block(std::size_t size) {
  void* p = heap::heap_malloc(heap::tls_heap, size);
  return STRATA_LIKELY(p != nullptr) ? p : new_retry(size, 0, false);
}

inline void* new_block_nothrow(std::size_t size) noexcept {
  void* p = heap::heap_malloc(heap::tls_heap, size);
  if (STRATA_LIKELY(p != nullptr)) return p;
  try {
    return new_retry(size, 0, true);
  } catch (...) {
    return nullptr;
  }
}

inline void* new_aligned(std::size_t size, std::align_val_t alignment) {
  void* p = strata_malloc_aligned(size, static_cast<std::size_t>(alignment));
  return STRATA_LIKELY(p != nullptr) ? p
                                     : new_retry(size, static_cast<std::size_t>(alignment), false);
}

inline void* new_aligned_nothrow(std::size_t size, std::align_val_t alignment) noexcept {
  void* p = strata_malloc_aligned(size, static_cast<std::size_t>(alignment));
  if (STRATA_LIKELY(p != nullptr)) return p;
  try {
    return new_retry(size, static_cast<std::size_t>(alignment), true);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

#define STRATA_NEW __attribute__((visibility("default")))

STRATA_NEW void* operator new(std::size_t size) {
  return new_block(size);
}
STRATA_NEW void* operator new[](std::size_t size) {
  return new_block(size);
}
STRATA_NEW void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return new_block_nothrow(size);
}
STRATA_NEW void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return new_block_nothrow(size);
}
STRATA_NEW void* operator new(std::size_t size, std::align_val_t alignment) {
  return new_aligned(size, alignment);
}
STRATA_NEW void* operator new[](std::size_t size, std::align_val_t alignment) {
  return new_aligned(size, alignment);
}
STRATA_NEW void* operator new(std::size_t size, std::align_val_t alignment,
                              const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(size, alignment);
}
STRATA_NEW void* operator new[](std::size_t size, std::align_val_t alignment,
                                const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(size, alignment);
}

STRATA_NEW void operator delete(void* p) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete(void* p, const std::nothrow_t&) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p, const std::nothrow_t&) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete(void* p, std::size_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p, std::size_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete(void* p, std::align_val_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p, std::align_val_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  heap::heap_free(p);
}
STRATA_NEW void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  heap::heap_free(p);
}
