// Every form of C++ operator new and delete, on the strata heap. Failure runs
// the installed new_handler and retries, then throws std::bad_alloc (or
// returns null for the nothrow forms), as the standard library does.
#include <new>

#include "heap/heap.hpp"
#include "override/trace_recorder.hpp"
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

// Records a block operator new returns, when STRATA_TRACE records.
inline void* recorded_new(void* p, std::size_t size, std::size_t alignment) noexcept {
  if (STRATA_UNLIKELY(trace_recorder::on()))
    trace_recorder::record(alignment != 0 ? trace::op::aligned : trace::op::malloc, p, size,
                           nullptr, alignment);
  return p;
}

// A failed first try retried through the new-handler, then recorded.
__attribute__((noinline)) void* new_block_slow(std::size_t size) {
  return recorded_new(new_retry(size, 0, false), size, 0);
}

inline void* new_block(std::size_t size) {
  if (STRATA_UNLIKELY(trace_recorder::on())) return new_block_slow(size);
  void* p = heap::heap_malloc(heap::tls_heap, size);
  return STRATA_LIKELY(p != nullptr) ? p : new_block_slow(size);
}

inline void* new_block_nothrow(std::size_t size) noexcept {
  void* p = heap::heap_malloc(heap::tls_heap, size);
  if (STRATA_LIKELY(p != nullptr)) return recorded_new(p, size, 0);
  try {
    return recorded_new(new_retry(size, 0, true), size, 0);
  } catch (...) {
    return nullptr;
  }
}

inline void* new_aligned(std::size_t size, std::align_val_t alignment) {
  auto align = static_cast<std::size_t>(alignment);
  void* p = strata_malloc_aligned(size, align);
  return recorded_new(STRATA_LIKELY(p != nullptr) ? p : new_retry(size, align, false), size, align);
}

inline void* new_aligned_nothrow(std::size_t size, std::align_val_t alignment) noexcept {
  auto align = static_cast<std::size_t>(alignment);
  void* p = strata_malloc_aligned(size, align);
  if (STRATA_LIKELY(p != nullptr)) return recorded_new(p, size, align);
  try {
    return recorded_new(new_retry(size, align, true), size, align);
  } catch (...) {
    return nullptr;
  }
}

// Every operator delete: the block freed, recorded first when tracing.
inline void delete_block(void* p) noexcept {
  if (STRATA_UNLIKELY(trace_recorder::on())) return trace_recorder::free_recorded(p);
  heap::heap_free(p);
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
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete(void* p, const std::nothrow_t&) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p, const std::nothrow_t&) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete(void* p, std::size_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p, std::size_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete(void* p, std::align_val_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p, std::align_val_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  delete_block(p);
}
STRATA_NEW void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  delete_block(p);
}
