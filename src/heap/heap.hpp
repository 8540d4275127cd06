// Heaps: the thread-local front of the allocator, and its fast paths.
//
// Each thread reaches its default heap through one initial-exec thread-local
// pointer that starts at a static empty heap, so the fast path never tests for
// initialisation: the empty heap's pages have no free blocks, the first malloc
// falls into the slow path, and that sets the thread up. First-class heaps are
// the same structure, created on demand and owned by their creating thread.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "heap/page.hpp"
#include "heap/segment.hpp"
#include "heap/size_class.hpp"
#include "os/os.hpp"

#define STRATA_LIKELY(x) __builtin_expect(!!(x), 1)
#define STRATA_UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifndef STRATA_TLS_MODEL
#define STRATA_TLS_MODEL "initial-exec"
#endif

namespace strata::heap {

// A counter written by one thread and read by any: no read-modify-write.
struct counter {
  std::atomic<std::uint64_t> value{0};
  void add(std::uint64_t n) {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

// Per-heap statistics; index class_count counts huge blocks. The fast paths
// count on the page instead (page::counts; a map page's page::mallocs), and
// the slow paths fold those counts in here.
struct heap_counters {
  counter mallocs[class_count + 1];
  counter frees[class_count + 1];
  counter cross_thread_frees;
};

struct page_queue {
  page* first = nullptr;
  page* last = nullptr;
};

struct heap {
  page* direct[direct_slots];         // small size slot -> page to allocate from
  page* current[class_count];         // class -> page to allocate from (queue head or empty page)
  thread_context* context = nullptr;  // null only in the static empty heap
  // The handle the C API gave out for this heap (address and generation,
  // heap_handle.hpp); the address alone once the heap is gone, so that a stale
  // handle is refused as one.
  std::uintptr_t handle = 0;
  heap_counters counters;
  page_queue queues[class_count];  // pages that may have free blocks
  page_queue full;                 // full pages and huge blocks; flagged page_in_full
  std::atomic<bool> full_pages_have_remote{false};  // another thread freed into a full page
  std::uint64_t single_released = 0;   // one-block classes (bit cls - 64) that gave a page back
  std::uint64_t single_recurring = 0;  // and were asked for again since: they keep one emptied
  heap* next_in_thread = nullptr;      // the owning thread's heaps
  heap* next_registered = nullptr;     // every live heap, for statistics
  heap* prev_registered = nullptr;

  constexpr heap();
};

// Blocks a thread freed into pages of other threads wait in an array until it
// is full or the thread enters the allocator's slow path: then every block is
// validated and its double-free mark checked with the misses overlapped, and
// the blocks go to their pages one batch per page (free.cpp). The bytes are
// bounded too, so a thread that frees large blocks and never allocates holds
// little back; a full array of list page blocks (under 4 KiB) stays within it.
inline constexpr std::uint32_t remote_pending_capacity = 512;
inline constexpr std::size_t remote_pending_max_bytes = std::size_t{2} << 20;

// A block freed into another thread's page, held back, and that page.
struct remote_pending_free {
  block* b;
  page* pg;
};

// Emptied pages a thread keeps in their queues, oldest first (retained.cpp).
inline constexpr std::size_t retained_slots = 32;
struct retained_ring {
  page* pages[retained_slots] = {};  // null where a page was taken back
  std::uint32_t oldest = 0;
  std::uint32_t count = 0;  // slots in use, nulls included
  std::size_t bytes = 0;    // slices of the pages held
};

// Emptied one-block pages a thread keeps as their classes' pages: the lowest
// ones only (retained.cpp).
inline constexpr std::size_t kept_single_slots = 8;

// Per-thread state shared by all heaps of the thread.
struct thread_context {
  heap main_heap;
  std::uintptr_t thread_id = 0;
  segment* segments = nullptr;  // normal segments this thread carves pages from
  std::size_t segment_count = 0;
  std::uint32_t remote_pending_count = 0;  // blocks waiting in remote_pending
  std::size_t remote_pending_bytes = 0;    // their sizes, list page blocks not counted
  std::int64_t next_purge = 0;             // ms clock of the earliest pending purge; 0 when none
  bool keeps_single_pages = false;         // an empty one-block page is some class's current one
  std::size_t fresh_bytes[2] = {};  // net fresh memory pages of many blocks [0] and of one [1] took
  bool taking_over[2] = {};         // that kind took the other's memory and takes more before fresh
  retained_ring retained;
  page* kept_single[kept_single_slots] = {};  // one-block pages some class keeps; may be null
  // Frees into other threads' pages, not posted yet; only the first
  // remote_pending_count are ever read, so it has no initialiser (metadata_new_uninitialised).
  remote_pending_free remote_pending[remote_pending_capacity];
};

// The page every slot of a fresh heap points at: never has a free block.
extern constinit page empty_page;
extern constinit heap empty_heap;

// What every allocation entry point reads of its thread, side by side so that
// one thread-pointer offset reaches both: the thread's default heap
// (empty_heap until it is set up) and the sampling countdown (sampling.hpp).
struct thread_entry {
  heap* own_heap;
  long sample_countdown;
};
extern constinit thread_local thread_entry tls_entry __attribute__((tls_model(STRATA_TLS_MODEL)));

// Every slot of a fresh heap points at the empty page.
constexpr heap::heap() : direct{}, current{} {
  for (page*& slot : direct) slot = &empty_page;
  for (page*& slot : current) slot = &empty_page;
}

// ---- slow paths (heap.cpp, free.cpp, huge.cpp) ----
void* malloc_refill(heap* h, std::size_t size) noexcept;
void* malloc_huge(heap* h, std::size_t size, std::size_t alignment) noexcept;
// The same, saying whether the block is known to read as zeros (calloc need not clear it).
void* malloc_huge_zeroed(heap* h, std::size_t size, std::size_t alignment, bool* zeroed) noexcept;
// malloc of a one-block class (above a slice, at most medium_max) saying, as
// malloc_huge_zeroed does, whether the block reads as zeros: a calloc of a
// large table then leaves the pages the program never touches unfaulted.
void* malloc_one_block_zeroed(heap* h, std::size_t size, bool* zeroed) noexcept;
void free_slow(segment* seg, page* pg, void* p) noexcept;
void page_emptied_by_owner(page* pg) noexcept;
// Store `counts`, whose owner-free count carried out of its 32 bits, and go on with the free.
void page_owner_frees_wrapped(page* pg, std::uint64_t counts) noexcept;
[[noreturn]] void report_double_free(const page* pg, const void* p) noexcept;
// `p` is not the start of a block of `pg` that strata handed out.
[[noreturn]] void report_invalid_free(const page* pg, const void* p) noexcept;
// The same two reports for free's fast path, which reaches them by a jump: declared
// as returning, they need no stack frame there (a call to a noreturn one does).
void free_double(const page* pg, const void* p) noexcept;
void free_invalid(const page* pg, const void* p) noexcept;
void free_foreign(void* p) noexcept;
heap* thread_heap_init() noexcept;

// ---- fast paths ----

// A block popped from the page's free list, or null when it has none.
inline void* page_pop(page* pg) noexcept {
  block* b = pg->free;
  if (STRATA_LIKELY(b != nullptr)) {
    block* next = b->next;
    pg->free = next;
    // Blocks other threads freed arrive with their lines in those threads'
    // caches: asking for the next one now overlaps its miss with the caller's work.
    __builtin_prefetch(next);
    b->free_tag = 0;  // handed out: a later free of it is not a double free
    pg->counts++;     // the whole word, as free writes it: no partial store to forward
  }
  return b;
}

// The lowest free block of a map page, its bit cleared and `used` counting it;
// null when no bit is set.
inline block* map_take_lowest(page* pg) noexcept {
  std::uint64_t map = pg->free_map;
  if (STRATA_UNLIKELY(map == 0)) return nullptr;
  pg->free_map = map & (map - 1);
  pg->counts++;
  return reinterpret_cast<block*>(pg->area +
                                  static_cast<std::size_t>(std::countr_zero(map)) * pg->block_size);
}

// A free block of a map page (the hot one, already counted in `used`, else the
// lowest), or null when none is free.
inline void* page_take(page* pg) noexcept {
  block* b = pg->free;
  if (STRATA_LIKELY(b != nullptr)) {
    pg->free = nullptr;
  } else {
    b = map_take_lowest(pg);
    if (STRATA_UNLIKELY(b == nullptr)) return nullptr;
  }
  pg->mallocs++;
  return b;
}

// Return the block of map page `pg` whose bit is `bit` (see map_block_bit):
// into the hot slot when empty (`used` keeps counting it; returns true), else
// its bit with `used` one less. The caller has checked that the block is not
// free already (in the hot slot or the map).
inline bool page_give(page* pg, void* p, std::uint64_t bit) noexcept {
  if (STRATA_LIKELY(pg->free == nullptr)) {
    pg->free = static_cast<block*>(p);
    return true;
  }
  pg->free_map |= bit;
  pg->counts--;
  return false;
}

// Allocate `size` bytes from `h`: a load, a test and a pop (or a bit taken from a
// map page) when the page has a free block.
inline void* heap_malloc(heap* h, std::size_t size) noexcept {
  page* pg;
  void* b;
  if (STRATA_LIKELY(size <= small_max)) {
    pg = h->direct[(size + 15) >> 4];
    b = page_pop(pg);
  } else if (STRATA_LIKELY(size <= medium_fine_max)) {
    pg = h->current[medium_fine_class_of(size)];
    // Laid out for map pages (4 KiB and up), whose pairs are the closer race.
    b = STRATA_UNLIKELY(size <= list_max_request) ? page_pop(pg) : page_take(pg);
  } else if (size <= medium_max) {
    pg = h->current[medium_coarse_class_of(size)];
    b = page_take(pg);  // a map page: every block above 4 KiB
  } else {
    return malloc_huge(h, size, 0);
  }
  return STRATA_LIKELY(b != nullptr) ? b : malloc_refill(h, size);
}

// Aligned allocation that needs no slow path: when the request rounded up to
// the alignment lands in a small class whose size the alignment divides, the
// class's blocks are aligned already (pages start 64 KiB-aligned). Null when
// that does not apply (or the alignment is not a power of two) or the page has no free block.
inline void* heap_malloc_aligned_fast(heap* h, std::size_t size, std::size_t alignment) noexcept {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  std::size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  if (rounded > small_max || rounded < size) return nullptr;
  std::size_t slot = (rounded + 15) >> 4;
  if ((class_block_size(small_class_of_slot[slot]) & (alignment - 1)) != 0) return nullptr;
  return page_pop(h->direct[slot]);
}

// Free `p`: on the owning thread, a push onto the page's free list (or a bit
// set in its map).
inline void heap_free(void* p) noexcept {
  segment* seg = segment_of(p);
  if (STRATA_UNLIKELY(!segment_map::contains(seg))) return free_foreign(p);
  // The owner word less this thread's id leaves the flags: none for a list page
  // of this thread, page_is_map for a map page; anything else takes the slow path.
  // A list page is one slice, so its descriptor is the slice's; only other pages
  // need the slice's page looked up.
  page* pg = seg->slice_descriptor(p);
  std::uintptr_t flags = pg->owner.load(std::memory_order_relaxed) ^ os::thread_id();
  if (STRATA_LIKELY(flags == 0)) {
    auto* b = static_cast<block*>(p);
    // A block start of the page, and not free already (its tag is the free mark).
    if (STRATA_UNLIKELY(!list_block_start(pg, p))) return free_invalid(pg, p);
    if (STRATA_UNLIKELY(b->free_tag == free_tag_of(pg))) return free_double(pg, p);
    b->next = pg->free;
    b->free_tag = free_tag_of(pg);
    pg->free = b;
    // One add lowers `used` and counts the free; its carry out, once in 2^32
    // frees between two folds, is counted in the slow path.
    std::uint64_t counts;
    if (STRATA_UNLIKELY(__builtin_add_overflow(pg->counts, owner_free_step, &counts)))
      return page_owner_frees_wrapped(pg, counts);
    pg->counts = counts;
    // A page left empty, unless it is first in its queue, or a double free.
    if (STRATA_UNLIKELY(page_free_is_event(pg, static_cast<std::uint32_t>(counts))))
      page_emptied_by_owner(pg);
    return;
  }
  // A slice other than its page's first has owner 0: only then is the page looked up.
  if (STRATA_UNLIKELY(flags != page_is_map) && pg->slice_count == 0) {
    pg = seg->page_at_slice_head(pg);
    flags = pg->owner.load(std::memory_order_relaxed) ^ os::thread_id();
  }
  if (STRATA_LIKELY(flags == page_is_map)) {
    std::uint64_t index;
    if (STRATA_UNLIKELY(!map_block_start(pg, p, index))) return free_invalid(pg, p);
    // Free already: its bit is set (tested in place), or it is the hot block
    // (only with the slot taken).
    if (STRATA_UNLIKELY((pg->free_map >> index) & 1)) return free_double(pg, p);
    if (STRATA_LIKELY(pg->free == nullptr)) {
      pg->free = static_cast<block*>(p);
      return;
    }
    if (STRATA_UNLIKELY(pg->free == p)) return free_double(pg, p);
    // Into the hot slot only on the current page, which is kept even when empty.
    // Otherwise: left with just the hot block (1 - 2 wraps), or a double free.
    page_give(pg, p, std::uint64_t{1} << index);
    if (STRATA_UNLIKELY(page_used(pg) - 2 >= pg->reserved)) page_emptied_by_owner(pg);
    return;
  }
  free_slow(seg, pg, p);
}

// The calling thread's default heap, set up on first use.
inline heap* default_heap() noexcept {
  heap* h = tls_entry.own_heap;
  return STRATA_LIKELY(h != &empty_heap) ? h : thread_heap_init();
}

// What free() does with a pointer that is not strata's: by default report it
// as corruption; the malloc override hands it to the C library it replaced.
using foreign_free_handler = void (*)(void*);
void set_foreign_free_handler(foreign_free_handler handler) noexcept;

// ---- the rest of the heap API (heap.cpp, huge.cpp, free.cpp) ----
void* heap_malloc_aligned(heap* h, std::size_t size, std::size_t alignment) noexcept;
// Usable size of any pointer, exact (heap_usable_size's slow path).
std::size_t usable_size(const void* p) noexcept;
// Report `p`, a pointer into a strata segment, unless it is a live block that
// strata handed out: an interior or stray pointer, or a freed block, aborts.
// The start of its block (before `p` for an aligned pointer); null when `p`
// is not strata's.
block* check_live_block(void* p) noexcept;
// Grow or shrink in place; false when the block cannot hold `size` bytes.
bool expand_in_place(void* p, std::size_t size) noexcept;
// Grow a huge block of this thread by moving its mapping (its pages move, no
// byte is copied); the new address, or null when that does not apply.
void* huge_move(void* p, std::size_t size) noexcept;
heap* heap_new() noexcept;
void heap_destroy(heap* h) noexcept;
void heap_delete(heap* h) noexcept;
// Visit live blocks; stops when visit returns false.
void heap_visit(heap* h, bool (*visit)(void* block, std::size_t size, void* arg),
                void* arg) noexcept;
// Validate every page of `h`; detected corruption is reported and aborts (check.cpp).
void heap_check(heap* h) noexcept;
// Flush deferred work of this thread; with force also purge and drop caches now.
void collect(bool force) noexcept;

// Usable size of `p` (0 for null or a pointer strata did not hand out). A
// block start on a live page of a size class is the class's size, read with
// the multiply free uses: programs that count their memory (redis) ask on
// every malloc and free. Aligned, huge and secure-mode blocks take usable_size.
inline std::size_t heap_usable_size(const void* p) noexcept {
  segment* seg = segment_of(p);
  if (STRATA_LIKELY(segment_map::contains(seg))) {
    const page* pg = seg->page_of(p);
    std::uintptr_t owner = pg->owner.load(std::memory_order_relaxed);
    auto offset = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - pg->area);
    std::uint64_t index = (offset * pg->block_inverse) >> 32;  // exact for a block start
    if (STRATA_LIKELY((owner & page_is_checked) == 0 && pg->size_class < class_count &&
                      index < pg->reserved && index * pg->block_size == offset))
      return pg->block_size;
  }
  return usable_size(p);
}

}  // namespace strata::heap
