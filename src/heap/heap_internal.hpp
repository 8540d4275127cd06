// Declarations shared by the heap's slow-path files (not part of the fast path).
#pragma once

#include "heap/heap.hpp"
#include "heap/stats_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

// ---- the small heap ----
// A process whose heap has committed less than this is a small program (or
// one starting), for which the heap's fixed costs in resident memory are what
// it pays most: its list pages are carved an OS page at a time (page_extend),
// and a one-block page's memory goes back to the OS with the page (page_free).
inline constexpr std::size_t small_heap_bytes = std::size_t{8} << 20;
inline bool heap_is_small() noexcept {
  return global_stats::committed.load(std::memory_order_relaxed) < small_heap_bytes;
}

// ---- pages (page_queue.cpp) ----
// Classes above one slice get a page per block, just long enough for it:
// a freed page then serves any class of its length or less, and a phase that
// frees and reallocates such blocks finds its pages laid out as before.
constexpr bool single_block_class(std::size_t cls) {
  return class_block_size(cls) > slice_size;
}
// A one-block class's bit in heap::single_released and single_recurring.
constexpr std::uint64_t single_class_bit(std::size_t cls) {
  return std::uint64_t{1} << (cls - 64);
}
static_assert(!single_block_class(63) && class_count - 64 <= 64);
// A malloc's slow path asks for class `cls`: a one-block class asked for again
// after giving its page back keeps its next one (page_emptied).
inline void note_class_asked(heap* h, std::size_t cls) noexcept {
  if (single_block_class(cls) && (h->single_released & single_class_bit(cls)) != 0)
    h->single_recurring |= single_class_bit(cls);
}
void queue_push_back(page_queue& q, page* pg);
void queue_push_front(page_queue& q, page* pg);
// Insert right after the queue's first page, which stays first.
void queue_push_second(page_queue& q, page* pg);
void queue_remove(page_queue& q, page* pg);
// Point current[cls] (and the direct slots of a small class) at the queue head.
void heap_set_current(heap* h, std::size_t cls);
// Take back the blocks other threads freed; returns how many.
std::uint32_t page_collect(page* pg);
// Count a page's mallocs and owner frees since its last fold in its heap's counters.
void page_fold_stats(heap* h, page* pg);
// Fold every page of `h` (its owning thread only).
void heap_fold_stats(heap* h);
// Move a page whose owner freed into it while it sat on the full list back to its queue.
void page_unfull(heap* h, page* pg);
// A page's last live block was freed by its owner (the page may be on the full list).
void page_emptied(heap* h, page* pg);
// A map page of `h` that is not its current page gets a hot block from its bits,
// or goes to the full list: the free fast path fills an empty hot slot without
// checking whether the page became empty, which only the current page may skip.
void page_settle(heap* h, page* pg);
// Give the thread's retained pages (emptied ones other than the current pages)
// and its empty one-block current pages back to their segments.
void thread_free_retained_pages(thread_context* ctx);
// Give back the current pages left empty that are not retained (their memory
// is outside the retained budget), span at most `max_slices` slices and hold
// one block or many as `single_block` says; true when there was any.
bool thread_free_empty_current_pages(thread_context* ctx, std::size_t max_slices,
                                     bool single_block);
// Give a page's slices (or a huge page's segment) back.
void page_free(heap* h, page* pg);
// Pages of `h` other threads freed into while they were full: requeue them.
void heap_requeue_remote_full(heap* h);
// Work postponed to the slow path: batched remote frees, purges, cache expiry.
void thread_deferred_work(heap* h);

// ---- checked pages: secure mode (checked.cpp) ----
// Whether secure mode is on (STRATA_SECURE): checked pages and guard pages.
// Inline, as the other modes: the refill path asks several times per page.
inline bool secure_mode() noexcept {
  return options::get(STRATA_OPTION_SECURE) != 0;
}
// malloc in secure mode: every request comes here, the fast path having no page.
void* checked_malloc(heap* h, std::size_t size) noexcept;
// Whether a checked page can hand out a block, carving or taking back delayed ones.
bool checked_has_block(page* pg);
// A block of a checked page (checked against overwrites), or null when it has none.
void* checked_take(page* pg);
// The owner frees `b`, a validated block of checked page `pg` that is not free already.
void checked_free_owned(page* pg, block* b);
// Blocks other threads freed into checked list page `pg`, linked raw, onto its delayed list.
void checked_collect(page* pg, block* list);
// Call `each` for every block on a checked list page's free lists (links checked).
void checked_for_each_free(const page* pg, void (*each)(const block* b, void* arg), void* arg);
// The tag a free block `b` of checked page `pg` carries.
std::uintptr_t checked_free_tag(const page* pg, const block* b);
// The tag a block freed by another thread carries, for any kind of page.
std::uintptr_t page_free_tag(const page* pg, const block* b);

// ---- debug mode (debug_mode.cpp) ----
// Whether blocks carry canaries and a size record, and free blocks a fill (STRATA_DEBUG).
inline bool debug_mode() noexcept {
  return options::get(STRATA_OPTION_DEBUG) != 0;
}
// Whether pages are checked: secure mode, debug mode or both.
inline bool checked_mode() noexcept {
  return secure_mode() || debug_mode();
}
// Bytes at the end of each debug-mode block holding the size asked for.
inline constexpr std::size_t debug_record_bytes = 8;
// A block of a checked page is handed out for `size` bytes: checks its free
// fill (list pages), writes canary and record, tells Valgrind.
void debug_block_taken(const page* pg, void* b, std::size_t size);
// A block of a checked page is freed: checks record and canary, fills it, tells Valgrind.
void debug_block_freed(const page* pg, void* b);
// The size asked for a live block of a checked page (record and canary
// checked); a freed block is reported as `freed_what`.
std::size_t debug_block_size(const page* pg, const void* b, const char* freed_what);
// Fill a free block of a checked page (past its link and tag).
void debug_fill_free(const page* pg, void* b);
// Check a free block's fill (list pages).
void debug_check_free_block(const page* pg, const void* b);
// Tell Valgrind of a huge block handed out or freed.
void debug_note_huge(void* p, std::size_t size, bool allocated);
// While one lives, in debug mode under Valgrind, memcheck reports nothing: the
// heap's own reads and writes of freed blocks are not the program's errors.
struct valgrind_quiet {
  valgrind_quiet();
  ~valgrind_quiet();
  valgrind_quiet(const valgrind_quiet&) = delete;
  valgrind_quiet& operator=(const valgrind_quiet&) = delete;
  bool active;
};

// ---- pages (heap.cpp) ----
// Park a page on the full list, unless other threads freed into it meanwhile
// (then false: collect it again).
bool page_to_full(heap* h, page* pg);
// A one-block page of class `cls` just handed out its block: it goes to the
// full list rather than stay current, so the page its class keeps is the first
// freed (page_emptied) and a phase that reallocates its blocks starts where
// the last one started. Other pages are left as they are.
void one_block_page_taken(heap* h, page* pg, std::size_t cls);
// A page of class `cls` that can hand out a block, first in its queue; null
// when out of memory. `zeroed`, when given, says whether the page is new and
// its memory reads as zeros (a block carved from it untouched then does too).
page* find_page(heap* h, std::size_t cls, bool* zeroed = nullptr);

// ---- retained pages (retained.cpp) ----
// Keep an emptied page of `ctx` in its queue; false when it is too large to keep.
bool retain_page(thread_context* ctx, page* pg);
// Whether `pg`, an emptied one-block page, may stay as its class's page: the
// thread keeps kept_single_slots of them, the lowest (in the oldest segments
// first), and one it no longer keeps goes back to its segment.
bool keep_single_page(thread_context* ctx, page* pg);
// A page is serving again or is going away: no longer retained or kept.
void retained_forget(thread_context* ctx, page* pg);
// Forget every retained page (a scan gave the emptied ones back).
void retained_clear(thread_context* ctx);

// ---- the purge thread (purger.cpp) ----
// Start the purge thread once cached memory waits for its delay and the heap
// has committed 4 MiB. Called where a nested malloc (pthread_create allocates)
// finds the heap consistent.
void purger_start_if_needed() noexcept;
// Whether the purge thread runs (and so keeps the segment cache's deadlines).
bool purger_running() noexcept;
// A deadline moved earlier: the purge thread looks at the deadlines again.
void purger_wake() noexcept;
// In a forked child: the purge thread stayed behind in the parent.
void purger_forget() noexcept;

// ---- fork (thread.cpp) ----
// Hold the heap's locks across fork(), so a child never finds one taken by a
// thread it does not have (the purge thread, say). Registers once; the malloc
// override calls it at start-up, the library when it starts its purge thread.
void register_fork_handlers() noexcept;

// ---- remote frees (free.cpp) ----
// Post the blocks this thread freed into other threads' pages and holds back.
void remote_flush_all(thread_context* ctx);

// ---- threads and heaps (thread.cpp) ----
// A segment for `ctx` with room: reclaimed from an exited thread (of either
// kind), or cached or new for pages of the given kind.
segment* thread_acquire_segment(thread_context* ctx, bool single_block_pages);
// A cached segment whose memory was not purged yet, for `ctx` and pages of the
// given kind: one last used for that kind, or with `any_kind` for either;
// null when none.
segment* thread_acquire_dirty_segment(thread_context* ctx, bool single_block_pages, bool any_kind);
// Give an empty segment of `ctx` that carved pages of the other kind to pages
// of the given kind; false when it has none.
bool thread_convert_empty_segment(thread_context* ctx, bool single_block_pages);
// Take over one segment of an exited thread; null when there is none.
segment* thread_adopt_abandoned(thread_context* ctx);
// Another thread posted freed blocks to a page of an exited thread: its
// segments are looked at once the purge delay passes.
void abandoned_note_free() noexcept;
// When the segments of exited threads are next due to be looked at (ms clock); 0 when never.
std::int64_t abandoned_deadline() noexcept;
// Take back the blocks freed into segments of exited threads, give their empty
// pages back and purge them once their delay passes (all at once with `force`);
// empty segments go to the shared cache.
void abandoned_collect(bool force) noexcept;
void thread_purge_due(thread_context* ctx, bool force);
// Purge a segment's free slices; an empty segment then goes to the shared cache
// unless it is the thread's last one.
void thread_purge_segment(thread_context* ctx, segment* seg);
// Hand a segment left empty to the shared cache (whose delay the purge thread
// keeps), unless it is the thread's last one.
void thread_release_if_empty(thread_context* ctx, segment* seg);
// Set errno to `error` and return null; with STRATA_SHOW_ERRORS also print one
// line naming the call, the size and (when not 0) the alignment asked for.
void* allocation_error(int error, const char* call, std::size_t size, std::size_t alignment);
// Report detected heap corruption (one line) and abort.
[[noreturn]] void heap_corruption(const char* what, const void* p);
// The same, naming the page the pointer falls in.
[[noreturn]] void heap_corruption_at(const char* what, const page* pg, const void* p);

}  // namespace strata::heap
