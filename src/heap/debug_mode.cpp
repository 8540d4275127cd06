// Debug mode (STRATA_DEBUG, or the debug preset): every page is checked (see
// checked.cpp), and each block of a checked page is laid out as
//   [user bytes][canary 0xca ...][8-byte record of the size asked for]
// while live, and filled with 0xdf past its link and tag while free. So a
// write past the end of a block is caught at its free, and a write into a
// freed block when the block is handed out again. Under Valgrind the heap
// tells memcheck about each block, so its leak and use-after-free reports
// cover strata's heaps.
#include <sched.h>
#include <atomic>
#include <cstring>

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define STRATA_HAVE_VALGRIND 1
#else
#define STRATA_HAVE_VALGRIND 0
#endif

#include "heap/heap_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

namespace {

constexpr unsigned char canary_byte = 0xca;
constexpr unsigned char free_byte = 0xdf;
constexpr std::size_t link_bytes = sizeof(block);  // a free block's link and tag: never filled
constexpr std::uint64_t record_salt = 0x5eed5eed00000000u;

std::uint8_t* bytes_of(const void* b) {
  return static_cast<std::uint8_t*>(const_cast<void*>(b));
}

// The record at the end of block `b`: the size asked for, salted.
std::uint64_t* record_of(const page* pg, const void* b) {
  return reinterpret_cast<std::uint64_t*>(bytes_of(b) + pg->block_size - debug_record_bytes);
}

// Whether `n` bytes at `p` all hold `value`.
bool all_equal(const std::uint8_t* p, std::size_t n, unsigned char value) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != value) return false;
  return true;
}

// Locks over a block's check and fill at its free, one per stripe of
// addresses. Two threads freeing one block at once (a double free racing
// itself) then take turns: the second finds the first's fill and reports a
// double free, not the half-filled canary it read as an overflow.
std::atomic<bool> free_stripes[64];

// The stripe lock of block `b`.
std::atomic<bool>& free_stripe(const void* b) {
  return free_stripes[(reinterpret_cast<std::uintptr_t>(b) >> 4) % 64];
}

}  // namespace

void debug_fill_free(const page* pg, void* b) {
  std::memset(bytes_of(b) + link_bytes, free_byte, pg->block_size - link_bytes);
}

void debug_block_taken(const page* pg, void* b, std::size_t size) {
  debug_check_free_block(pg, b);
  std::size_t end = pg->block_size - debug_record_bytes;
  std::memset(bytes_of(b) + size, canary_byte, end - size);
  *record_of(pg, b) = size ^ record_salt;
#if STRATA_HAVE_VALGRIND
  VALGRIND_MALLOCLIKE_BLOCK(b, size, 0, 0);
#endif
}

std::size_t debug_block_size(const page* pg, const void* b, const char* freed_what) {
  std::uint64_t size = *record_of(pg, b) ^ record_salt;
  if (all_equal(reinterpret_cast<const std::uint8_t*>(record_of(pg, b)), debug_record_bytes,
                free_byte))
    heap_corruption_at(freed_what, pg, b);
  if (size > pg->block_size - debug_record_bytes)
    heap_corruption_at("size record after the block overwritten (buffer overflow)", pg, b);
  std::size_t end = pg->block_size - debug_record_bytes;
  if (!all_equal(bytes_of(b) + size, end - size, canary_byte))
    heap_corruption_at("canary after the block overwritten (buffer overflow)", pg, b);
  return size;
}

void debug_block_freed(const page* pg, void* b) {
  std::atomic<bool>& stripe = free_stripe(b);
  while (stripe.exchange(true, std::memory_order_acquire)) sched_yield();
  debug_block_size(pg, b, "double free");  // a corrupt block aborts here, holding the stripe
  debug_fill_free(pg, b);
  stripe.store(false, std::memory_order_release);
#if STRATA_HAVE_VALGRIND
  VALGRIND_FREELIKE_BLOCK(b, 0);
#endif
}

void debug_note_huge(void* p, std::size_t size, bool allocated) {
#if STRATA_HAVE_VALGRIND
  if (allocated)
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, 0);
  else
    VALGRIND_FREELIKE_BLOCK(p, 0);
#else
  (void)p;
  (void)size;
  (void)allocated;
#endif
}

void debug_check_free_block(const page* pg, const void* b) {
  // Map blocks are not filled when carved, so only a list block's fill says "untouched".
  if (!page_has_map(pg) &&
      !all_equal(bytes_of(b) + link_bytes, pg->block_size - link_bytes, free_byte))
    heap_corruption_at("freed block written to (use after free)", pg, b);
}

valgrind_quiet::valgrind_quiet() : active(debug_mode()) {
#if STRATA_HAVE_VALGRIND
  if (active) VALGRIND_DISABLE_ERROR_REPORTING;
#endif
}

valgrind_quiet::~valgrind_quiet() {
#if STRATA_HAVE_VALGRIND
  if (active) VALGRIND_ENABLE_ERROR_REPORTING;
#endif
}

}  // namespace strata::heap
