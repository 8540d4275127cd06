// The C allocation entry points of the drop-in replacement (LD_PRELOAD or
// linked first): malloc, free and the rest of the glibc family, including the
// __libc_* aliases, forwarded to the strata heap.
//
// Pointers strata did not allocate (taken from glibc before the override took
// effect, e.g. by the dynamic loader) are handed back to the C library.
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "heap/heap.hpp"
#include "heap/sampling.hpp"
#include "options/options.hpp"
#include "options/report_output.hpp"
#include "override/cxx_runtime.hpp"
#include "override/trace_recorder.hpp"
#include "strata/strata.h"

#define STRATA_OVERRIDE extern "C" __attribute__((visibility("default")))

namespace strata::heap {
void register_fork_handlers() noexcept;
}  // namespace strata::heap

namespace {

using namespace strata;
using trace_recorder::on;
using trace_recorder::record;

// The C library's own function `name`, for pointers that are not strata's,
// looked up on first use (racing lookups find the same address).
template <class Fn>
Fn libc_function(std::atomic<Fn>& cache, const char* name) {
  Fn fn = cache.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    cache.store(fn, std::memory_order_relaxed);
  }
  return fn;
}

std::atomic<void (*)(void*)> libc_free{nullptr};
std::atomic<std::size_t (*)(void*)> libc_usable{nullptr};

void free_with_libc(void* p) {
  auto fn = libc_function(libc_free, "free");
  if (fn != nullptr) fn(p);
}

std::size_t libc_usable_size(void* p) {
  auto fn = libc_function(libc_usable, "malloc_usable_size");
  return fn != nullptr ? fn(p) : 0;
}

// Whether `p` is strata's: in its segments, or a block one of its samplers placed.
bool is_strata(const void* p) {
  return heap::segment_map::lookup(p) != nullptr || heap::sampled_usable_size(p) != 0;
}

// Statistics at exit (STRATA_SHOW_STATS, or STRATA_STATS_FILE) go to the report
// output, which outlives the program's own stderr: coreutils close theirs in an
// exit handler that runs before this one.
void print_stats_at_exit() {
  if (options::get(STRATA_OPTION_SHOW_STATS) == 0 && !options::report_output_is_stats_file())
    return;
  int fd = ::dup(options::report_fd());
  FILE* out = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  if (out == nullptr) {
    if (fd >= 0) ::close(fd);
    return;
  }
  strata_stats_print(out, 0);
  std::fclose(out);
}

__attribute__((constructor(101))) void override_init() {
  options::initialize();
  heap::set_foreign_free_handler(free_with_libc);
  heap::register_fork_handlers();
  override_new::find_cxx_runtime_early();
  atexit(print_stats_at_exit);
  trace_recorder::start();
  heap::sampling_start();
}

}  // namespace

// malloc and free start on a 64-byte boundary: their fast paths then sit in the
// fewest fetch blocks whatever else moves in the library (unaligned, pair loops
// measured up to 1 ns slower on some builds).
STRATA_OVERRIDE __attribute__((aligned(64))) void* malloc(size_t size) noexcept {
  if (STRATA_UNLIKELY(heap::sample_due())) return trace_recorder::malloc_recorded(size);
  return heap::heap_malloc(heap::tls_entry.own_heap, size);
}

STRATA_OVERRIDE __attribute__((aligned(64))) void free(void* p) noexcept {
  if (STRATA_UNLIKELY(on())) return trace_recorder::free_recorded(p);
  heap::heap_free(p);
}

STRATA_OVERRIDE void cfree(void* p) noexcept {
  free(p);
}

STRATA_OVERRIDE void* calloc(size_t count, size_t size) noexcept {
  void* p = strata_calloc(count, size);
  if (STRATA_UNLIKELY(on())) record(trace::op::calloc, p, count * size);
  return p;
}

namespace {

// realloc without the recording.
void* resize(void* p, size_t size) noexcept {
  if (p != nullptr && !is_strata(p)) {  // a C library block moves into strata
    std::size_t old = libc_usable_size(p);
    void* q = strata_malloc(size);
    if (q == nullptr) return nullptr;
    std::memcpy(q, p, old < size ? old : size);
    free_with_libc(p);
    return q;
  }
  if (p != nullptr && size == 0) {  // as glibc: free, and no block
    heap::heap_free(p);
    return nullptr;
  }
  return strata_realloc(p, size);
}

// realloc recorded: a shrink to nothing is a free, anything else a realloc.
__attribute__((noinline, cold)) void* resize_recorded(void* p, size_t size) noexcept {
  if (p != nullptr && size == 0 && is_strata(p)) {
    trace_recorder::free_recorded(p);
    return nullptr;
  }
  void* q = resize(p, size);
  record(trace::op::realloc, q, size, p);
  return q;
}

// The aligned entry points' recording twins, out of line so that their fast
// paths keep nothing of the recording but the test of on().
__attribute__((noinline, cold)) void* aligned_recorded(size_t size, size_t alignment) noexcept {
  void* p = heap::malloc_aligned_entry(size, alignment);
  record(trace::op::aligned, p, size, nullptr, alignment);
  return p;
}

__attribute__((noinline, cold)) int posix_memalign_recorded(void** out, size_t alignment,
                                                            size_t size) noexcept {
  int error = heap::posix_memalign_entry(out, alignment, size);
  record(trace::op::aligned, error == 0 ? *out : nullptr, size, nullptr, alignment);
  return error;
}

}  // namespace

STRATA_OVERRIDE void* realloc(void* p, size_t size) noexcept {
  if (STRATA_UNLIKELY(on())) return resize_recorded(p, size);
  return resize(p, size);
}

STRATA_OVERRIDE void* reallocarray(void* p, size_t count, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

STRATA_OVERRIDE void* memalign(size_t alignment, size_t size) noexcept {
  // glibc rounds a non-power-of-two alignment up instead of failing, and refuses
  // one with no power of two above it.
  if (alignment > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return nullptr;
  }
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) alignment = std::bit_ceil(alignment);
  if (alignment == 0) alignment = 1;
  if (STRATA_UNLIKELY(on())) return aligned_recorded(size, alignment);
  return heap::malloc_aligned_entry(size, alignment);
}

STRATA_OVERRIDE void* aligned_alloc(size_t alignment, size_t size) noexcept {
  if (STRATA_UNLIKELY(on())) return aligned_recorded(size, alignment);
  return heap::malloc_aligned_entry(size, alignment);
}

STRATA_OVERRIDE int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  if (STRATA_UNLIKELY(on())) return posix_memalign_recorded(out, alignment, size);
  return heap::posix_memalign_entry(out, alignment, size);
}

STRATA_OVERRIDE void* valloc(size_t size) noexcept {
  auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = strata_malloc_aligned(size, page);
  if (STRATA_UNLIKELY(on())) record(trace::op::aligned, p, size, nullptr, page);
  return p;
}

STRATA_OVERRIDE void* pvalloc(size_t size) noexcept {
  auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (size > SIZE_MAX - page) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = strata_malloc_aligned(size == 0 ? page : (size + page - 1) & ~(page - 1), page);
  if (STRATA_UNLIKELY(on())) record(trace::op::aligned, p, size, nullptr, page);
  return p;
}

STRATA_OVERRIDE size_t malloc_usable_size(void* p) noexcept {
  if (p == nullptr) return 0;
  std::size_t usable = heap::heap_usable_size(p);  // 0: not strata's
  return usable != 0 ? usable : libc_usable_size(p);
}

STRATA_OVERRIDE int malloc_trim(size_t) noexcept {
  strata_collect(1);
  return 1;
}

STRATA_OVERRIDE struct mallinfo2 mallinfo2() noexcept {
  strata_stats_t s;
  strata_stats_get(&s);
  struct mallinfo2 info {};
  info.arena = s.committed - (s.huge_in_use < s.committed ? s.huge_in_use : 0);
  info.ordblks = static_cast<size_t>(s.pages);
  info.hblks = 0;
  info.hblkhd = s.huge_in_use;
  info.uordblks = s.in_use;
  info.fordblks = s.committed > s.in_use ? s.committed - s.in_use : 0;
  info.usmblks = s.peak_in_use;
  info.keepcost = 0;
  return info;
}

STRATA_OVERRIDE struct mallinfo mallinfo() noexcept {
  struct mallinfo2 wide = mallinfo2();
  struct mallinfo info {};
  auto clamp = [](size_t v) { return static_cast<int>(v > INT32_MAX ? INT32_MAX : v); };
  info.arena = clamp(wide.arena);
  info.ordblks = clamp(wide.ordblks);
  info.hblkhd = clamp(wide.hblkhd);
  info.uordblks = clamp(wide.uordblks);
  info.fordblks = clamp(wide.fordblks);
  info.usmblks = clamp(wide.usmblks);
  return info;
}

// glibc's internal names, called directly by some programs and libraries.
STRATA_OVERRIDE void* __libc_malloc(size_t size) noexcept {
  return malloc(size);
}
STRATA_OVERRIDE void __libc_free(void* p) noexcept {
  free(p);
}
STRATA_OVERRIDE void __libc_cfree(void* p) noexcept {
  free(p);
}
STRATA_OVERRIDE void* __libc_calloc(size_t count, size_t size) noexcept {
  return calloc(count, size);
}
STRATA_OVERRIDE void* __libc_realloc(void* p, size_t size) noexcept {
  return realloc(p, size);
}
STRATA_OVERRIDE void* __libc_memalign(size_t alignment, size_t size) noexcept {
  return memalign(alignment, size);
}
STRATA_OVERRIDE void* __libc_valloc(size_t size) noexcept {
  return valloc(size);
}
STRATA_OVERRIDE void* __libc_pvalloc(size_t size) noexcept {
  return pvalloc(size);
}
STRATA_OVERRIDE int __posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  return posix_memalign(out, alignment, size);
}
