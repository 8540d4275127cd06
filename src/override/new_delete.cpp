// Every form of C++ operator new and delete, on the strata heap. Failure runs
// the installed new_handler and retries, then throws std::bad_alloc (or
// returns null for the nothrow forms), as the standard library does.
//
// The override links no C++ runtime, so that a C program under LD_PRELOAD
// does not load libstdc++ (about 1 MiB of resident memory) for nothing. The
// few runtime functions a failed operator new needs are looked up in the
// process at load (and, for a runtime a plugin brings in later, at its first
// failure): any caller of operator new has a runtime loaded.
#include <dlfcn.h>
#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>

#include "heap/heap.hpp"
#include "heap/sampling.hpp"
#include "options/report_output.hpp"
#include "os/mutex.hpp"
#include "override/cxx_runtime.hpp"
#include "override/trace_recorder.hpp"
#include "strata/strata.h"

namespace {

using namespace strata;

using nothrow_new_fn = void* (*)(std::size_t, const std::nothrow_t&) noexcept;
using nothrow_new_aligned_fn = void* (*)(std::size_t, std::align_val_t,
                                         const std::nothrow_t&) noexcept;

// The C++ runtime's part in a failed operator new: the installed new-handler,
// std::bad_alloc, and the runtime's own nothrow operator new.
struct cxx_runtime {
  std::new_handler (*get_new_handler)() = nullptr;
  void (*throw_bad_alloc)() = nullptr;  // never returns
  nothrow_new_fn nothrow_new = nullptr;
  nothrow_new_aligned_fn nothrow_new_aligned = nullptr;
};

cxx_runtime runtime;
std::atomic<bool> runtime_found{false};
os::mutex runtime_lookup;

template <class Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// The library of the process's C++ runtime, kept open (our pointers into it
// must outlive a dlclose of what loaded it). A runtime a plugin brought in with
// RTLD_LOCAL is outside the global scope, so it is asked for by name; a runtime
// linked into the executable is found in the global scope.
void* runtime_library() noexcept {
  for (const char* name : {"libstdc++.so.6", "libc++.so.1"}) {
    void* library = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (library != nullptr) return library;
  }
  return dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv") != nullptr ? RTLD_DEFAULT : nullptr;
}

// The process's C++ runtime (libstdc++ or libc++), found once; null while no
// runtime is loaded, so that one loaded later with dlopen is still found.
const cxx_runtime* find_runtime() noexcept {
  if (runtime_found.load(std::memory_order_acquire)) return &runtime;
  std::lock_guard<os::mutex> guard(runtime_lookup);
  if (runtime_found.load(std::memory_order_relaxed)) return &runtime;
  void* library = runtime_library();
  if (library == nullptr) return nullptr;
  runtime.get_new_handler = symbol<std::new_handler (*)()>(library, "_ZSt15get_new_handlerv");
  runtime.throw_bad_alloc = symbol<void (*)()>(library, "_ZSt17__throw_bad_allocv");
  if (runtime.throw_bad_alloc == nullptr)
    runtime.throw_bad_alloc = symbol<void (*)()>(library, "_ZNSt3__117__throw_bad_allocEv");
  // In the global scope the first nothrow new is ours: the runtime's is not to be had.
  if (library != RTLD_DEFAULT) {
    runtime.nothrow_new = symbol<nothrow_new_fn>(library, "_ZnwmRKSt9nothrow_t");
    runtime.nothrow_new_aligned =
        symbol<nothrow_new_aligned_fn>(library, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  }
  if (runtime.get_new_handler == nullptr) return nullptr;
  runtime_found.store(true, std::memory_order_release);
  return &runtime;
}

// The installed new-handler; null when there is none (or no C++ runtime).
std::new_handler current_new_handler() noexcept {
  const cxx_runtime* cxx = find_runtime();
  return cxx != nullptr ? cxx->get_new_handler() : nullptr;
}

// Throw std::bad_alloc through the runtime. Without one, no code could catch
// it: one diagnostic line, then abort.
[[noreturn]] void throw_bad_alloc() {
  const cxx_runtime* cxx = find_runtime();
  if (cxx != nullptr && cxx->throw_bad_alloc != nullptr) cxx->throw_bad_alloc();
  static const char line[] =
      "strata: operator new failed and no C++ runtime can throw std::bad_alloc\n";
  options::report_write(line, sizeof(line) - 1);
  std::abort();
}

// One more try of the heap.
void* try_heap(std::size_t size, std::size_t alignment) noexcept {
  return alignment != 0 ? strata_malloc_aligned(size, alignment) : strata_malloc(size);
}

// The throwing forms after a failed first try: call the new-handler and retry
// until it is removed, then throw. What the handler throws passes through.
__attribute__((noinline)) void* new_retry(std::size_t size, std::size_t alignment) {
  for (;;) {
    void* p = try_heap(size, alignment);
    if (p != nullptr) return p;
    std::new_handler handler = current_new_handler();
    if (handler == nullptr) throw_bad_alloc();
    handler();
  }
}

// The nothrow forms after a failed first try. A new-handler may throw, and
// nothrow new must turn that into null: the runtime's own nothrow new does the
// catching, around a call of the throwing operator new, which is ours.
__attribute__((noinline)) void* new_retry_nothrow(std::size_t size,
                                                  std::size_t alignment) noexcept {
  if (current_new_handler() == nullptr) return nullptr;
  const cxx_runtime* cxx = find_runtime();
  const std::nothrow_t tag{};
  if (alignment == 0) return cxx->nothrow_new != nullptr ? cxx->nothrow_new(size, tag) : nullptr;
  return cxx->nothrow_new_aligned != nullptr
             ? cxx->nothrow_new_aligned(size, std::align_val_t{alignment}, tag)
             : nullptr;
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
  return recorded_new(new_retry(size, 0), size, 0);
}

inline void* new_block(std::size_t size) {
  if (STRATA_UNLIKELY(heap::sample_due()))
    return trace_recorder::new_recorded(size, new_block_slow);
  void* p = heap::heap_malloc(heap::tls_entry.own_heap, size);
  return STRATA_LIKELY(p != nullptr) ? p : new_block_slow(size);
}

inline void* new_block_nothrow(std::size_t size) noexcept {
  void* p = heap::malloc_hooked(heap::tls_entry.own_heap, size);
  if (STRATA_LIKELY(p != nullptr)) return recorded_new(p, size, 0);
  return new_retry_nothrow(size, 0);  // a block it finds was recorded by operator new
}

inline void* new_aligned(std::size_t size, std::align_val_t alignment) {
  auto align = static_cast<std::size_t>(alignment);
  void* p = strata_malloc_aligned(size, align);
  return recorded_new(STRATA_LIKELY(p != nullptr) ? p : new_retry(size, align), size, align);
}

inline void* new_aligned_nothrow(std::size_t size, std::align_val_t alignment) noexcept {
  auto align = static_cast<std::size_t>(alignment);
  void* p = strata_malloc_aligned(size, align);
  if (STRATA_LIKELY(p != nullptr)) return recorded_new(p, size, align);
  return new_retry_nothrow(size, align);  // a block it finds was recorded by operator new
}

// Every operator delete: the block freed, recorded first when tracing.
inline void delete_block(void* p) noexcept {
  if (STRATA_UNLIKELY(trace_recorder::on())) return trace_recorder::free_recorded(p);
  heap::heap_free(p);
}

}  // namespace

void strata::override_new::find_cxx_runtime_early() noexcept {
  (void)find_runtime();
}

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
