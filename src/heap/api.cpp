// The C API over the heap: POSIX error conventions on top of the heap calls.
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heap/heap_handle.hpp"
#include "heap/heap_internal.hpp"
#include "heap/sampling.hpp"
#include "options/report_output.hpp"
#include "strata/strata.h"

using namespace strata::heap;

namespace {

// One line naming the call and what is wrong with the handle, then abort: a
// heap handle that is no live heap's would corrupt whatever it points at.
[[noreturn]] void refuse_handle(const char* call, const char* what, const void* handle) {
  char line[192];
  int n = std::snprintf(line, sizeof(line), "strata: %s: %s (handle %p)\n", call, what, handle);
  if (n > 0) strata::options::report_write(line, static_cast<std::size_t>(n));
  std::abort();
}

// The live heap `handle` names, or a refusal: a pointer that is no handle, a
// handle of a heap destroyed since (remade at its address or not), and a call
// from a thread that does not own the heap (its pages and lists take no locks,
// so the call would race with the owner). One load and two compares.
heap* owned_heap(strata_heap_t* handle, const char* call) {
  auto bits = reinterpret_cast<std::uintptr_t>(handle);
  if (!looks_like_handle(bits)) refuse_handle(call, "not a strata heap", handle);
  heap* h = heap_of_handle(bits);
  if (h->handle != bits) [[unlikely]] {
    // A heap that was there left its address, with no generation or a later one.
    bool was_there = heap_of_handle(h->handle) == h;
    refuse_handle(call, was_there ? "heap destroyed" : "not a strata heap", handle);
  }
  if (h->context->thread_id != strata::os::thread_id()) {
    char line[160];
    int n = std::snprintf(line, sizeof(line),
                          "strata: %s called from a thread that does not own heap %p\n", call,
                          static_cast<void*>(handle));
    if (n > 0) strata::options::report_write(line, static_cast<std::size_t>(n));
    std::abort();
  }
  return h;
}

// A heap to allocate from, or null with errno EINVAL for a null handle.
heap* allocating_heap(strata_heap_t* handle, const char* call) {
  if (handle == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  return owned_heap(handle, call);
}

// A first-class heap to end: never null, never a thread's default heap.
heap* ending_heap(strata_heap_t* handle, const char* call) {
  if (handle == nullptr) refuse_handle(call, "null heap", handle);
  heap* h = owned_heap(handle, call);
  if (h == &h->context->main_heap) refuse_handle(call, "a thread's default heap", handle);
  return h;
}

// count * size, or false when it overflows.
bool checked_multiply(std::size_t count, std::size_t size, std::size_t* out) {
  return !__builtin_mul_overflow(count, size, out);
}

void* zeroed(heap* h, std::size_t count, std::size_t size) {
  std::size_t total;
  if (!checked_multiply(count, size, &total)) return allocation_error(ENOMEM, "calloc", size, 0);
  // Memory fresh from the OS (or purged) reads as zeros already: a large
  // calloc then touches no page the program does not (python3 -c pass
  // callocs 384 KiB of tables at start and touches 12 KiB of them).
  bool known_zero = false;
  void* p;
  if (total > medium_max)
    p = malloc_huge_zeroed(h, total, 0, &known_zero);
  else if (total <= medium_fine_max)
    p = malloc_hooked(h, total);
  else  // a one-block class: counted for sampling as malloc_hooked counts
    p = sample_due() ? malloc_sampled(h, total) : malloc_one_block_zeroed(h, total, &known_zero);
  if (p != nullptr && !known_zero) std::memset(p, 0, total);
  return p;
}

// Blocks a realloc moves out of, from this size up, give their memory back at
// once, as glibc's mapped chunks do: a growth chain (256 KiB, 512 KiB, ...
// 8 MiB) would otherwise hold every step resident until the purge delay passes.
constexpr std::size_t realloc_purge_min = std::size_t{256} << 10;

// Whether a block of `usable` bytes resized to `size` stays where it is: the
// new size fits and fills at least half of it.
bool stays_in_place(std::size_t size, std::size_t usable) {
  return size <= usable && size >= usable / 2;
}

// A new block of `size` bytes from `h` holding what fits of `p`'s `usable`
// bytes; null when none can be had. The caller frees `p`.
void* copy_to_new_block(heap* h, void* p, std::size_t size, std::size_t usable) {
  void* q = malloc_hooked(h, size);
  if (q != nullptr) std::memcpy(q, p, size < usable ? size : usable);
  return q;
}

// Resize a sampled block (outside strata's segments): always moved, so the
// new block is drawn for sampling like any other.
void* resize_sampled(heap* h, void* p, std::size_t size, std::size_t usable) {
  void* q = copy_to_new_block(h, p, size, usable);
  if (q != nullptr) sampled_free(p);
  return q;
}

// Resize `p` within heap `h`: in place when the block allows, else move.
void* resize(heap* h, void* p, std::size_t size) {
  if (p == nullptr) return malloc_hooked(h, size);
  // The usual case, a block of one of this thread's list pages (Python resizes
  // its strings and lists so): checked as free checks it, with one lookup. (A
  // size past the classes takes the full path, which names realloc if refused.)
  segment* seg = segment_of(p);
  if (STRATA_LIKELY(segment_map::contains(seg) && size <= medium_max)) {
    page* pg = seg->slice_descriptor(p);
    if ((pg->owner.load(std::memory_order_relaxed) ^ strata::os::thread_id()) == 0 &&
        list_block_start(pg, p) && static_cast<block*>(p)->free_tag != free_tag_of(pg)) {
      if (stays_in_place(size, pg->block_size)) return p;
      void* q = copy_to_new_block(h, p, size, pg->block_size);
      if (q != nullptr) heap_free(p);
      return q;
    }
  }
  if (seg == nullptr || !segment_map::contains(seg)) {
    std::size_t usable = sampled_usable_size(p);  // reports a misused sampled block
    if (usable != 0) return resize_sampled(h, p, size, usable);
  }
  // Resizing a freed or interior pointer is misuse, caught as free would.
  block* start = check_live_block(p);
  if (start == nullptr) {
    errno = EINVAL;  // not strata's: cannot know its size
    return nullptr;
  }
  if (size > largest_request())  // no block can grow that far: `p` stays as it is
    return allocation_error(ENOMEM, "realloc", size, 0);
  std::size_t usable = heap_usable_size(p);
  // Shrinking to at least half keeps the block; growing tries in place first.
  // Debug mode always moves, so the canary follows the new size.
  bool in_place = !debug_mode();
  if (in_place && stays_in_place(size, usable)) return p;
  if (in_place && size > usable && expand_in_place(p, size)) return p;
  if (in_place && size > medium_max) {
    if (void* q = huge_move(p, size)) return q;
  }
  void* q = copy_to_new_block(h, p, size, usable);
  if (q == nullptr) return nullptr;
  if (in_place && usable >= realloc_purge_min) {  // debug mode checks the block's tail at free
    auto offset = static_cast<std::size_t>(static_cast<std::uint8_t*>(p) -
                                           reinterpret_cast<std::uint8_t*>(start));
    segment_purge_freed_block(start, offset + usable);
  }
  heap_free(p);
  return q;
}

}  // namespace

void* strata_malloc(size_t size) noexcept {
  return malloc_hooked(tls_entry.own_heap, size);
}

void* strata_calloc(size_t count, size_t size) noexcept {
  heap* h = default_heap();
  if (h == nullptr) return allocation_error(ENOMEM, "calloc", size, 0);
  return zeroed(h, count, size);
}

void* strata_realloc(void* p, size_t size) noexcept {
  heap* h = default_heap();
  if (h == nullptr) return allocation_error(ENOMEM, "realloc", size, 0);
  return resize(h, p, size);
}

void strata_free(void* p) noexcept {
  heap_free(p);
}

void strata_free_sized(void* p, size_t) noexcept {
  heap_free(p);
}

void* strata::heap::malloc_aligned_counted(std::size_t size, std::size_t alignment,
                                           bool drawn) noexcept {
  heap* h = default_heap();
  if (h == nullptr) return allocation_error(ENOMEM, "malloc_aligned", size, alignment);
  return drawn ? malloc_aligned_sampled(h, size, alignment)
               : heap_malloc_aligned(h, size, alignment);
}

void* strata_malloc_aligned(size_t size, size_t alignment) noexcept {
  return malloc_aligned_entry(size, alignment);
}

void* strata_aligned_alloc(size_t alignment, size_t size) noexcept {
  return malloc_aligned_entry(size, alignment);
}

// The aligned path of strata_malloc_aligned, with errno as it was: POSIX has
// posix_memalign return its error instead.
int strata::heap::posix_memalign_counted(void** out, std::size_t size, std::size_t alignment,
                                         bool drawn) noexcept {
  int saved = errno;
  void* p = malloc_aligned_counted(size, alignment, drawn);
  int result = p == nullptr ? errno : 0;
  errno = saved;
  if (p == nullptr) return result;
  *out = p;
  return 0;
}

// posix_memalign's C API twin: the override's posix_memalign runs the same inline path.
int strata_posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  return posix_memalign_entry(out, alignment, size);
}

size_t strata_usable_size(const void* p) noexcept {
  return heap_usable_size(p);
}

void* strata_expand(void* p, size_t size) noexcept {
  if (p == nullptr) return nullptr;
  check_live_block(p);
  return expand_in_place(p, size) ? p : nullptr;
}

size_t strata_malloc_batch(size_t size, size_t count, void** out) noexcept {
  if (out == nullptr && count != 0) {
    errno = EINVAL;
    return 0;
  }
  heap* h = tls_entry.own_heap;
  for (size_t i = 0; i < count; ++i) {
    out[i] = heap_malloc(h, size);
    if (out[i] == nullptr) return i;
    h = tls_entry.own_heap;  // the first call may have set this thread up
  }
  return count;
}

void strata_free_batch(void** blocks, size_t count) noexcept {
  if (blocks == nullptr && count != 0)
    refuse_handle("strata_free_batch", "null array of blocks", blocks);
  for (size_t i = 0; i < count; ++i) heap_free(blocks[i]);
}

strata_heap_t* strata_heap_new(void) noexcept {
  heap* h = heap_new();
  if (h == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  return reinterpret_cast<strata_heap_t*>(h->handle);
}

void* strata_heap_malloc(strata_heap_t* h, size_t size) noexcept {
  heap* target = allocating_heap(h, "strata_heap_malloc");
  return target != nullptr ? malloc_hooked(target, size) : nullptr;
}

void* strata_heap_calloc(strata_heap_t* h, size_t count, size_t size) noexcept {
  heap* target = allocating_heap(h, "strata_heap_calloc");
  return target != nullptr ? zeroed(target, count, size) : nullptr;
}

void* strata_heap_realloc(strata_heap_t* h, void* p, size_t size) noexcept {
  heap* target = allocating_heap(h, "strata_heap_realloc");
  return target != nullptr ? resize(target, p, size) : nullptr;
}

void* strata_heap_malloc_aligned(strata_heap_t* h, size_t size, size_t alignment) noexcept {
  heap* target = allocating_heap(h, "strata_heap_malloc_aligned");
  return target != nullptr ? malloc_aligned_hooked(target, size, alignment) : nullptr;
}

void strata_heap_destroy(strata_heap_t* h) noexcept {
  heap_destroy(ending_heap(h, "strata_heap_destroy"));
}

void strata_heap_delete(strata_heap_t* h) noexcept {
  heap_delete(ending_heap(h, "strata_heap_delete"));
}

strata_heap_t* strata_heap_default(void) noexcept {
  heap* h = default_heap();
  return h != nullptr ? reinterpret_cast<strata_heap_t*>(h->handle) : nullptr;
}

void strata_heap_visit(strata_heap_t* h, strata_block_visitor visit, void* arg) noexcept {
  if (h == nullptr) refuse_handle("strata_heap_visit", "null heap", h);
  if (visit == nullptr) refuse_handle("strata_heap_visit", "null visitor", h);
  struct adapter {
    strata_block_visitor visit;
    void* arg;
  } a{visit, arg};
  heap_visit(
      owned_heap(h, "strata_heap_visit"),
      [](void* block, std::size_t size, void* ctx) {
        auto* ad = static_cast<adapter*>(ctx);
        return ad->visit(block, size, ad->arg) != 0;
      },
      &a);
}

void strata_collect(int force) noexcept {
  collect(force != 0);
}

int strata_heap_check(strata_heap_t* h) noexcept {
  heap* target = h != nullptr ? owned_heap(h, "strata_heap_check") : default_heap();
  if (target != nullptr) heap_check(target);
  return 1;
}
