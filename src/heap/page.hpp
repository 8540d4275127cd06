// A page: a run of slices inside a segment holding blocks of one size class.
//
// Pages of blocks under 4 KiB keep their free blocks on `free`, a list threaded
// through the blocks. Pages of larger blocks (at most 16 a page) keep them in
// `free_map`, one bit a block, so that neither carving nor freeing writes into a
// block: memory the program never touches is never faulted in. A map page's
// `free` holds one more free block, the hot block, which malloc takes first;
// it stays counted in `used`, so a malloc/free loop touches neither the bits nor
// `used`. Only a page's current page (or a full one) has no hot block.
//
// `free` is popped by the owning thread only. Other threads push freed blocks
// onto `thread_free` with one compare-exchange per batch, which also adds the
// batch's length to a count kept in the same word; the owner takes the whole
// list back in its slow path and, knowing its length, need not walk it. The
// owner word combines the owning thread's id with flag bits, so the free fast
// path is a single compare.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "heap/size_class.hpp"

namespace strata::heap {

struct heap;
struct segment;
struct page;

// A free block: the link, then a tag saying "free in page X". A list page's
// free writes the tag and malloc clears it, so a second free of the same
// block finds it; the page's descriptor address is a value no program holds.
struct block {
  block* next;
  std::uintptr_t free_tag;
};

// The tag a free block of list page `pg` carries (see block).
inline std::uintptr_t free_tag_of(const page* pg) {
  return reinterpret_cast<std::uintptr_t>(pg);
}

// The tag a block of map page `pg` carries while it waits, freed by another
// thread, for its owner to collect it (which clears it). Map blocks are never
// written when carved, so one may still hold a list page's tag from the slices'
// earlier life: the low bit tells the two apart.
inline std::uintptr_t remote_map_tag_of(const page* pg) {
  return reinterpret_cast<std::uintptr_t>(pg) | 1;
}

// Flag bits kept in the low bits of page::owner (thread ids are 16-byte aligned).
inline constexpr std::uintptr_t page_in_full = 1;      // on the heap's full list
inline constexpr std::uintptr_t page_has_aligned = 2;  // holds pointers interior to blocks
inline constexpr std::uintptr_t page_is_map = 4;       // tracks free blocks in free_map
inline constexpr std::uintptr_t page_is_checked = 8;   // secure mode's page (checked.cpp)
inline constexpr std::uintptr_t page_flag_mask = 15;
// Flags a page keeps when it changes owner.
inline constexpr std::uintptr_t page_kind_flags = page_has_aligned | page_is_map | page_is_checked;

// Low bit of page::thread_free: the page is on its heap's full list, so a
// thread that frees into it must tell the heap. Kept in the same word the
// freeing thread swaps, so it learns this without touching the page again.
inline constexpr std::uintptr_t thread_free_full = 1;
// The high 16 bits of page::thread_free count the blocks on its list (a page
// holds at most 4096; strata's addresses lie below 2^47).
inline constexpr unsigned thread_free_count_shift = 48;
inline constexpr std::uintptr_t thread_free_blocks_mask =
    ((std::uintptr_t{1} << thread_free_count_shift) - 1) & ~thread_free_full;

// 128 bytes, a power of two: free finds a page's descriptor with a shift.
struct alignas(128) page {
  // The first cache line holds what the owner writes as it allocates and frees;
  // the second what other threads read to free into the page (the owner word,
  // the geometry) or write once a batch (thread_free). Split so, a thread that
  // frees into a page its owner is allocating from takes no miss per block.
  block* free;            // blocks ready to hand out (owner only); on a map
                          // page at most one, the "hot" block, its next unused
  std::uint64_t counts;   // low half: `used`, blocks handed out, including those
                          // in thread_free and a map page's hot block; high half:
                          // a list page's owner frees since the last stats fold
  std::uint64_t mallocs;  // map pages: blocks handed out since the last stats fold
  union {
    std::uint64_t free_map;  // map pages: bit i set = block i is free (owner only)
    block* delayed_free;     // checked list pages: blocks freed, handed out once `free` is empty
  };
  std::uint32_t empty_check_bias;  // see page_set_first_in_queue
  std::uint32_t empty_check_limit;
  page* next;  // in the heap's queue or full list
  page* prev;
  std::uint32_t used_at_fold;   // page_live() then, less blocks collected from others
  std::uint32_t retained_slot;  // 1 + its slot in the thread's retained ring; 0 when none

  alignas(64) std::atomic<std::uintptr_t> owner;  // owning thread id | flags; 0 when abandoned
  std::uint32_t reserved;                         // blocks the page can hold
  std::uint32_t block_inverse;              // ceil(2^32 / block_size): block index by a multiply
  std::size_t block_size;                   // bytes per block
  std::uint8_t* area;                       // first block
  std::uint32_t slice_count;                // 0 while the slice run is not a page
  std::uint32_t size_class;                 // class index; class_count for a huge block
  std::uint32_t slice_index;                // first slice in the segment
  std::uint32_t capacity;                   // blocks carved out of the page so far
  std::atomic<std::uintptr_t> thread_free;  // count << 48 | blocks freed by other threads |
                                            // thread_free_full
  std::atomic<heap*> owner_heap;            // read by other threads only as a hint
};

static_assert(std::endian::native == std::endian::little,
              "page::counts keeps `used` in its low half");

// Blocks carved so far, as another thread validating a pointer it frees reads
// it while the owner carves more: relaxed atomic accesses (plain moves on x86).
inline std::uint32_t page_capacity_seen(const page* pg) {
  return std::atomic_ref<std::uint32_t>(const_cast<page*>(pg)->capacity)
      .load(std::memory_order_relaxed);
}
inline void page_capacity_grow(page* pg, std::uint32_t n) {
  std::atomic_ref<std::uint32_t>(pg->capacity).store(pg->capacity + n, std::memory_order_relaxed);
}

// Blocks handed out (see page::counts).
inline std::uint32_t page_used(const page* pg) {
  return static_cast<std::uint32_t>(pg->counts);
}

// Added to page::counts by an owner's free of a list page: `used` falls by one
// and the carry counts the free in the high half, so statistics cost free no
// add of its own (and malloc none at all: mallocs = frees + growth in `used`).
inline constexpr std::uint64_t owner_free_step = (std::uint64_t{1} << 32) - 1;

// The free fast path's one compare, `used - empty_check_bias >= empty_check_limit`,
// catches a page left empty (used - 1 wraps) and a double free (used wraps).
// The page first in its queue, which malloc takes from, stays even when empty:
// its bias and limit make reaching zero no event, so a malloc/free loop on an
// otherwise empty page takes no jump.
inline void page_set_first_in_queue(page* pg, bool first) {
  pg->empty_check_bias = first ? 0 : 1;
  pg->empty_check_limit = pg->reserved + (first ? 1 : 0);
}

// Whether an owner's free of a list page, which left `used` blocks out, needs
// the slow path (see page_set_first_in_queue).
inline bool page_free_is_event(const page* pg, std::uint32_t used) {
  return used - pg->empty_check_bias >= pg->empty_check_limit;
}

// Blocks of this size and up live on map pages.
inline constexpr std::size_t map_min_block_size = 4096;
// The largest request served from a list page.
inline constexpr std::size_t list_max_request = class_sizes[size_class_of(map_min_block_size) - 1];

// Whether a page tracks its free blocks in free_map (huge pages do not).
inline bool page_has_map(const page* pg) {
  return pg->size_class < class_count && pg->block_size >= map_min_block_size;
}

// Bit of the map page block starting at `p`: a multiply, no division.
inline std::uint64_t map_bit(const page* pg, const void* p) {
  auto offset = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - pg->area);
  return std::uint64_t{1} << ((offset * pg->block_inverse) >> 32);
}

// Whether `p` starts a block of list page `pg`. A list page is one 64 KiB
// slice whose blocks start at its first byte, so the offset is p's low 16 bits,
// and with block_inverse = ceil(2^32 / size) an offset below 2^16 is a multiple
// of a size below 2^16 exactly when offset * block_inverse, mod 2^32, is below
// block_inverse (Lemire, Kaser and Kurz, "Faster remainder by direct computation").
inline bool list_block_start(const page* pg, const void* p) {
  auto offset = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p) & 0xffff);
  return offset * pg->block_inverse < pg->block_inverse;
}

// Whether `p` starts one of map page `pg`'s blocks, whose index goes to
// `index`: the index by a multiply, exact for a block start, which must name a
// block and multiply back to the offset (else an interior or stray pointer).
inline bool map_block_start(const page* pg, const void* p, std::uint64_t& index) {
  auto offset = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - pg->area);
  index = (offset * pg->block_inverse) >> 32;
  return index < pg->reserved && index * pg->block_size == offset;
}

// The bit of the map page block starting at `p`, or 0 when `p` is not the
// start of one of the page's blocks.
inline std::uint64_t map_block_bit(const page* pg, const void* p) {
  std::uint64_t index;
  return map_block_start(pg, p, index) ? std::uint64_t{1} << index : 0;
}

// Blocks the program holds: `used` less a map page's hot block.
inline std::uint32_t page_live(const page* pg) {
  return page_used(pg) - (page_has_map(pg) && pg->free != nullptr ? 1 : 0);
}

// The list of blocks other threads freed, from a thread_free word.
inline block* thread_free_blocks(std::uintptr_t word) {
  return reinterpret_cast<block*>(word & thread_free_blocks_mask);
}

// How many blocks that list holds.
inline std::uint32_t thread_free_count(std::uintptr_t word) {
  return static_cast<std::uint32_t>(word >> thread_free_count_shift);
}

// Start of the block that contains `p` (p may point inside an aligned block).
inline block* block_containing(const page* pg, const void* p) {
  auto offset = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - pg->area);
  return reinterpret_cast<block*>(pg->area + offset / pg->block_size * pg->block_size);
}

}  // namespace strata::heap
