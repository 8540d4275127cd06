// Segments: 32 MiB-aligned OS reservations cut into 64 KiB slices.
//
// Because a segment is aligned to its size, `pointer -> segment` is a mask and
// `segment -> page` an index: no lookup table. Slice 0 holds this header; runs
// of the other slices become pages. A huge block (above the largest size class)
// gets a segment of its own whose single page starts after the header.
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

struct segment {
  bool huge;
  std::size_t size;       // bytes reserved
  thread_context* owner;  // thread that carves pages from it; null when abandoned or cached
  segment* next;          // in the owner's list, the abandoned list or a cache
  segment* prev;
  std::int64_t purge_deadline;  // ms clock; 0 when nothing is waiting to be purged
  std::uint32_t pages_in_use;
  std::uint64_t free_slices[bitmap_words];   // 1 = slice not part of a page
  std::uint64_t dirty_slices[bitmap_words];  // 1 = free slice that may still hold memory
  std::uint16_t slice_page[slice_count];     // slice -> byte offset of its page descriptor
                                             // (in a huge segment every slice maps to page 0)
  page pages[slice_count];                   // descriptor of each page, at its first slice

  // The page holding address `p` inside this segment. A page's first slice
  // holds its descriptor, found by arithmetic alone; only a slice inside a
  // larger page (slice_count 0 there) costs a load of slice_page. Keeping the
  // common case free of that load shortens free's path to the page's fields.
  page* page_of(const void* p) {
    std::size_t offset = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(p) -
                                                  reinterpret_cast<std::uintptr_t>(this));
    std::size_t slice = offset >> slice_shift;
    page* pg = &pages[slice];
    if (__builtin_expect(pg->slice_count == 0, 0)) pg = page_at(slice_page[slice]);
    return pg;
  }
  page* page_at(std::uint16_t descriptor_offset) {
    return reinterpret_cast<page*>(reinterpret_cast<std::uint8_t*>(this) + descriptor_offset);
  }
  // What slice_page holds for the slices of the page starting at `first`.
  std::uint16_t descriptor_offset(std::size_t first) {
    return static_cast<std::uint16_t>(reinterpret_cast<std::uint8_t*>(&pages[first]) -
                                      reinterpret_cast<std::uint8_t*>(this));
  }
  std::uint8_t* slice_start(std::size_t slice) {
    return reinterpret_cast<std::uint8_t*>(this) + slice * slice_size;
  }
};

static_assert(sizeof(segment) <= slice_size, "segment header must fit in slice 0");
static_assert(sizeof(segment) <= 65535, "page descriptor offsets must fit slice_page");

inline segment* segment_of(const void* p) {
  return reinterpret_cast<segment*>(reinterpret_cast<std::uintptr_t>(p) & ~(segment_size - 1));
}

// One byte per segment-sized stretch of the 47-bit address space (4 MiB of
// address space, touched only where segments live): set while a strata segment
// lives there, so free() can tell strata's pointers from others. A byte rather
// than a bit keeps the check to a shift, a bound and one compare.
namespace segment_map {
inline constexpr std::size_t units = std::size_t{1} << (47 - segment_shift);
extern std::atomic<std::uint8_t> present[units];

// The bound and the byte are tested together, with no branch between them:
// free's fast path then takes no jump to get past this check.
inline bool contains(const segment* s) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(s) >> segment_shift;
  bool marked = present[index & (units - 1)].load(std::memory_order_relaxed) != 0;
  return (index < units) & marked;
}
void add(const segment* s);
void remove(const segment* s);
}  // namespace segment_map

// Map a fresh normal segment for `owner`; null when the OS refuses.
segment* segment_acquire(thread_context* owner);
// Give an empty normal segment back (to the cache or the OS).
void segment_release(segment* seg);
// Map a segment holding one huge page of at least `size` bytes aligned to
// `alignment`; the page's area and block size are set. Null when the OS refuses.
segment* huge_segment_acquire(std::size_t size, std::size_t alignment);
void huge_segment_release(segment* seg);

// Find and claim `count` free slices (only slices still holding memory when
// dirty_only); returns the first slice index, or 0 when there is no such run.
std::size_t segment_claim_slices(segment* seg, std::size_t count, bool dirty_only);
// Return the slices of `pg` to the segment's free set.
void segment_free_slices(segment* seg, std::size_t first, std::size_t count);
// Purge the free dirty slices of a segment now. While the segment has live
// pages and may be backed by transparent huge pages, only whole free huge pages
// are purged; the rest stays dirty until its huge page is free or the segment empties.
void segment_purge(segment* seg);
bool segment_is_empty(const segment* seg);

// Purge cached segments whose delay expired (all with `force`).
void segment_cache_collect(bool force);
// Whether cached memory waits for its purge delay.
bool segment_cache_pending();
// The purge thread's loop: sleep until the cache's next deadline, purge, repeat.
[[noreturn]] void segment_cache_purge_forever();

// Held across fork() so the child never sees the cache half-updated.
void segment_cache_lock();
void segment_cache_unlock();

// Milliseconds on a monotonic clock.
std::int64_t clock_ms();

}  // namespace strata::heap
