// Huge-page advice for a heap that fills fresh memory densely (see the header).
#include "heap/huge_page_advice.hpp"

#include <cstdint>

#include "heap/slice_bitmap.hpp"
#include "heap/stats_internal.hpp"
#include "options/options.hpp"
#include "os/os.hpp"

namespace strata::heap {

namespace {

// Slices per huge page, or 0 where a segment's 32-bit mask cannot track its
// huge pages (a huge page under 1 MiB or over a segment).
std::size_t slices_per_huge_page() {
  std::size_t per = os::huge_page_size() / slice_size;
  return per != 0 && slice_count % per == 0 && slice_count / per <= 32 ? per : 0;
}

// Bit `index` of a segment's huge_advised mask.
std::uint32_t huge_page_bit(std::size_t index) {
  return std::uint32_t{1} << index;
}

// Whether the heap holds enough to take huge pages, and nothing advises or
// backs every segment already.
bool heap_takes_huge_pages() {
  long after = options::get(STRATA_OPTION_HUGE_PAGES_AFTER);
  if (after == 0 || options::get(STRATA_OPTION_LARGE_OS_PAGES) != 0 || os::huge_pages_always())
    return false;
  return global_stats::committed.load(std::memory_order_relaxed) >= static_cast<std::size_t>(after);
}

// Whether slices [first, first + per) all hold pages carved to their last
// block with three in four of their blocks handed out (or the segment's
// header). Pages of 4 KiB blocks and up are carved whole as they are set up:
// carving alone would call a page holding one block dense.
bool densely_used(const segment* seg, std::size_t first, std::size_t per) {
  if (slice_bitmap::count(seg->free_slices, first, per) != 0) return false;
  for (std::size_t s = first > header_slices ? first : header_slices; s < first + per; ++s) {
    const page& pg = seg->pages[seg->slice_head[s]];
    if (page_capacity_seen(&pg) != pg.reserved || page_used(&pg) < pg.reserved - pg.reserved / 4)
      return false;
  }
  return true;
}

// Whether nothing has touched slices [first, first + per) since they were
// mapped or purged: all free and clean.
bool untouched(const segment* seg, std::size_t first, std::size_t per) {
  return slice_bitmap::count(seg->free_slices, first, per) == per &&
         slice_bitmap::count(seg->dirty_slices, first, per) == 0;
}

}  // namespace

void advise_untouched_huge_pages(segment* seg, std::size_t start, std::size_t count) {
  std::size_t per = slices_per_huge_page();
  if (per == 0 || seg->single_block_pages) return;
  std::size_t mapped_huge_pages = seg->size / slice_size / per;
  for (std::size_t index = start / per; index <= (start + count - 1) / per; ++index) {
    std::size_t first = index * per;
    if (index == 0 || index >= mapped_huge_pages || (seg->huge_advised & huge_page_bit(index)) != 0)
      continue;
    if (!untouched(seg, first, per) || !densely_used(seg, first - per, per) ||
        !heap_takes_huge_pages())
      continue;
    if (os::hint_huge_pages(seg->slice_start(first), per * slice_size))
      seg->huge_advised |= huge_page_bit(index);
  }
}

std::size_t mark_free_advised_huge_pages_dirty(segment* seg) {
  std::size_t per = slices_per_huge_page();
  if (per == 0 || seg->huge || seg->huge_advised == 0) return 0;
  std::size_t marked = 0;
  for (std::size_t index = 1; index < slice_count / per; ++index) {
    std::size_t first = index * per;
    if ((seg->huge_advised & huge_page_bit(index)) == 0 ||
        slice_bitmap::count(seg->free_slices, first, per) != per)
      continue;
    std::size_t dirty = slice_bitmap::count(seg->dirty_slices, first, per);
    if (dirty == 0 || dirty == per) continue;
    slice_bitmap::assign(seg->dirty_slices, first, per, true);
    marked += per - dirty;
  }
  return marked;
}

bool streams_into_new_segment(const segment* newest) {
  std::size_t per = slices_per_huge_page();
  if (per == 0 || newest == nullptr || newest->single_block_pages) return false;
  std::size_t last = slice_count / per - 1;
  return (newest->huge_advised & huge_page_bit(last)) != 0 &&
         densely_used(newest, last * per, per) && heap_takes_huge_pages();
}

void forget_huge_advice_past(segment* seg, std::size_t mapped) {
  std::size_t per = slices_per_huge_page();
  if (per == 0) return;
  std::size_t whole = mapped / (per * slice_size);
  if (whole < 32) seg->huge_advised &= huge_page_bit(whole) - 1;
}

}  // namespace strata::heap
