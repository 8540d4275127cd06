// Segments: 32 MiB-aligned OS reservations cut into 64 KiB slices.
//
// Because a segment is aligned to its size, `pointer -> segment` is a mask and
// `segment -> page` an index: no lookup table. The first two slices hold this
// header, which starts with one 128-byte page descriptor per slice; runs of the
// other slices become pages. A huge block (above the largest size class) gets
// a segment of its own whose single page, pages[0], starts after the header.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "heap/page.hpp"

namespace strata::heap {

struct thread_context;

inline constexpr std::size_t segment_shift = 25;
inline constexpr std::size_t segment_size = std::size_t{1} << segment_shift;  // 32 MiB
inline constexpr std::size_t slice_shift = 16;
inline constexpr std::size_t slice_size = std::size_t{1} << slice_shift;  // 64 KiB
inline constexpr std::size_t slice_count = segment_size / slice_size;     // 512
inline constexpr std::size_t bitmap_words = slice_count / 64;
inline constexpr std::size_t header_slices = 2;
inline constexpr std::size_t header_size = header_slices * slice_size;
inline constexpr std::size_t descriptor_shift = 7;  // log2(sizeof(page))

struct segment {
  page pages[slice_count];  // descriptor of each page, at its first slice; first in the
                            // header, so a descriptor's address is a shift of the slice's
  bool huge;
  bool growth_blocked;            // another mapping lies right past `size`: it maps no more
  std::atomic<bool> slices_busy;  // held while the slice bitmaps change or are purged:
                                  // a forced collection purges any thread's segments
  std::size_t size;               // bytes mapped from its start: a normal segment maps its
                                  // range in steps, a huge one ends with its block
  thread_context* owner;          // thread that carves pages from it; null when abandoned or cached
  segment* next;                  // in the owner's list, the abandoned list or a cache
  segment* prev;
  segment* next_mapped;  // every mapped normal segment, for a forced collection
  segment* prev_mapped;
  std::int64_t purge_deadline;  // ms clock; 0 when nothing is waiting to be purged
  std::uint64_t serial;         // mapping order: threads carve from their oldest segments first
  bool single_block_pages;      // its pages hold one block each (classes above a slice)
  std::uint32_t huge_advised;   // bit i: the range's i-th huge page is advised MADV_HUGEPAGE
  std::uint32_t pages_in_use;
  std::uint64_t free_slices[bitmap_words];   // 1 = slice not part of a page
  std::uint64_t dirty_slices[bitmap_words];  // 1 = free slice that may still hold memory
  std::uint16_t slice_head[slice_count];     // slice -> first slice of the page it is in
                                             // (in a huge segment every slice maps to page 0)
  // Where each class's freed pages began, while no page has used the slices
  // since: a page of many blocks is claimed at such a place first when it
  // still holds memory, so a repeated phase lays its pages out again where
  // they were instead of on memory other classes' pages left untouched.
  std::uint64_t class_places[class_count][bitmap_words];  // per class, 1 = its place
  std::uint8_t place_class[slice_count];  // 1 + the class whose place the slice is; 0 if none
  static_assert(class_count < 256, "place_class holds 1 + a class in a byte");

  // The page holding address `p` inside this segment. A page's first slice
  // holds its descriptor, found by a shift and a mask alone; only a slice
  // inside a larger page (slice_count 0 there) costs a load of slice_head.
  // Keeping the common case free of that load shortens free's path to the page.
  page* page_of(const void* p) { return page_at_slice_head(slice_descriptor(p)); }
  // The descriptor of the slice holding `p`: its page's only when the slice is
  // the page's first. Any other slice's has owner 0 (a page's is cleared when
  // it goes), so a descriptor with an owner is the page's.
  page* slice_descriptor(const void* p) {
    // slice index * sizeof(page), as one shift and one mask
    std::size_t offset = (reinterpret_cast<std::uintptr_t>(p) >> (slice_shift - descriptor_shift)) &
                         ((slice_count - 1) << descriptor_shift);
    return reinterpret_cast<page*>(reinterpret_cast<std::uint8_t*>(pages) + offset);
  }
  // The page whose slice has descriptor `pg` (see slice_descriptor).
  page* page_at_slice_head(page* pg) {
    if (__builtin_expect(pg->slice_count == 0, 0)) pg = &pages[slice_head[pg - pages]];
    return pg;
  }
  std::uint8_t* slice_start(std::size_t slice) {
    return reinterpret_cast<std::uint8_t*>(this) + slice * slice_size;
  }
};

static_assert(sizeof(page) == std::size_t{1} << descriptor_shift,
              "free finds a descriptor with a shift, not a multiply");
static_assert(sizeof(segment) <= header_size, "segment header must fit its slices");

// A segment's `size`, as a thread other than its owner reads it while the
// owner maps more of it (or grows a huge block).
inline std::size_t segment_mapped_bytes(segment* s) {
  return std::atomic_ref<std::size_t>(s->size).load(std::memory_order_relaxed);
}
inline void segment_set_mapped_bytes(segment* s, std::size_t bytes) {
  std::atomic_ref<std::size_t>(s->size).store(bytes, std::memory_order_relaxed);
}

inline segment* segment_of(const void* p) {
  return reinterpret_cast<segment*>(reinterpret_cast<std::uintptr_t>(p) & ~(segment_size - 1));
}

// One byte per segment-sized stretch of the 47-bit address space (4 MiB of
// address space, touched only where segments live): 1 where a strata segment
// starts, so free() can tell strata's pointers from others. A byte rather
// than a bit keeps the check to a shift, a bound and one compare. A huge
// block aligned to the segment size or more starts in a later unit of its
// segment: that unit holds 1 + its distance in units from the header.
namespace segment_map {
inline constexpr std::size_t units = std::size_t{1} << (47 - segment_shift);
extern std::atomic<std::uint8_t> present[units];

// The bound and the byte are tested together, with no branch between them:
// free's fast path then takes no jump to get past this check.
inline bool contains(const segment* s) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(s) >> segment_shift;
  bool marked = present[index & (units - 1)].load(std::memory_order_relaxed) == 1;
  return (index < units) & marked;
}
void add(const segment* s);
void remove(const segment* s);
// Mark (or clear) the unit where a far-aligned huge block of `s` starts.
void add_far_block(const segment* s, const void* area);
void remove_far_block(const void* area);
// The segment holding `p` when p's unit is a segment's first or a far-aligned
// huge block's and `p` lies inside the segment's mapping; null otherwise (the
// slow paths' form of contains).
segment* lookup(const void* p);
}  // namespace segment_map

// Which cached segments segment_acquire may take, the oldest first.
enum class cached_segment {
  dirty_own_kind,  // one still holding memory, last used for pages of the kind asked; none new
  dirty_any_kind,  // one still holding memory, whichever kind (it changes kind); none new
  any,             // a dirty one of the kind asked or a purged one, else a fresh mapping
};
// A normal segment for `owner` that will carve pages of one block each or of
// many (`single_block_pages`), as `which` allows; null when there is none or
// the OS refuses.
segment* segment_acquire(thread_context* owner, cached_segment which, bool single_block_pages);
// Give an empty normal segment back (to the cache or the OS).
void segment_release(segment* seg);
// Map a segment holding one huge page of at least `size` bytes aligned to
// `alignment`; the page's area and block size are set, and `zeroed` says whether
// the block is known to read as zeros (fresh or purged memory). Null when the
// OS refuses or the size is beyond largest_request().
segment* huge_segment_acquire(std::size_t size, std::size_t alignment, bool* zeroed);
// A huge segment for a block of `size` bytes made of a cached one that still
// holds its memory and maps at most a segment's size, the smallest such; null
// when there is none (or in secure mode). Its block keeps the whole mapping.
segment* huge_segment_reuse(std::size_t size);
// The largest block the heap tries to map: the machine's memory plus swap,
// beyond which the kernel's overcommit heuristic refuses a mapping anyway.
std::size_t largest_request();
void huge_segment_release(segment* seg);

// Which free slices segment_claim_slices may take.
enum class slice_claim {
  class_place,  // a run still holding memory that starts where a page of the class did
  dirty,        // a run still holding memory
  mapped,       // any run inside the segment's mapping
  growing,      // any run, mapping more of the segment if it must
};
// Find and claim `count` free slices for a page of class `cls`, as `which`
// allows; returns the first slice index, or 0 when there is no such run.
// `zeroed`, when given, says whether the run reads as zeros: none of its slices was
// written since it was mapped or purged with MADV_DONTNEED.
std::size_t segment_claim_slices(segment* seg, std::size_t count, std::size_t cls,
                                 slice_claim which, bool* zeroed);
// Add the `count` slices right after page `pg` to it (the caller sets its new
// length); false unless they are all free and the segment can map them.
bool segment_extend_page(segment* seg, page* pg, std::size_t count);
// Return the slices of `pg` to the segment's free set.
void segment_free_slices(segment* seg, std::size_t first, std::size_t count);
// Purge the free dirty slices of a segment now. While the segment has live
// pages and may be backed by transparent huge pages, only whole free huge pages
// are purged; the rest stays dirty until its huge page is free or the segment empties.
void segment_purge(segment* seg);
bool segment_is_empty(const segment* seg);
// Purge the memory of freed block `b`, `bytes` long, but its first OS page,
// which holds the link its owner follows when another thread freed it.
void segment_purge_freed_block(void* b, std::size_t bytes);

// Purge cached segments whose delay expired (all with `force`).
void segment_cache_collect(bool force);
// Purge the free slices of every normal segment, whichever thread owns it (a
// forced collection); one whose bitmaps are busy just then is left as it is.
void segment_purge_everywhere();
// When the earliest cached segment's purge delay passes (ms clock); 0 when none waits.
std::int64_t segment_cache_deadline();

// Held across fork() so the child never sees the cache or the list of mapped
// segments half-updated.
void segment_cache_lock();
void segment_cache_unlock();

// Milliseconds on a monotonic clock.
std::int64_t clock_ms();

}  // namespace strata::heap
