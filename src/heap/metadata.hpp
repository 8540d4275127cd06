// Memory for the allocator's own bookkeeping (thread contexts, heaps), taken
// straight from the OS and recycled, never returned: a stale pointer to a
// retired heap stays readable, which lets other threads treat it as a hint.
#pragma once

#include <cstddef>
#include <new>

namespace strata::heap {

void* metadata_allocate(std::size_t size) noexcept;
void metadata_free(void* p, std::size_t size) noexcept;
void metadata_lock() noexcept;
void metadata_unlock() noexcept;

template <class T>
T* metadata_new() noexcept {
  void* p = metadata_allocate(sizeof(T));
  return p == nullptr ? nullptr : new (p) T();
}

// Default-initialised, not zeroed first: a member without an initialiser keeps
// what the memory held, so an array nobody reads before writing is not touched
// (thread_context::remote_pending, 8 KiB: two pages every thread faulted in).
template <class T>
T* metadata_new_uninitialised() noexcept {
  void* p = metadata_allocate(sizeof(T));
  return p == nullptr ? nullptr : new (p) T;
}

template <class T>
void metadata_delete(T* p) noexcept {
  p->~T();
  metadata_free(p, sizeof(T));
}

}  // namespace strata::heap
