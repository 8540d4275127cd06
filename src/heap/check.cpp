// strata_heap_check: a heap validated on demand, page by page. Everything a
// page records about its blocks must agree: free lists inside the page and
// free-marked, counts that add up, and in debug mode the fill of free blocks
// and the canary and size record of live ones.
#include <bit>

#include "heap/heap_internal.hpp"

namespace strata::heap {

namespace {

constexpr std::size_t max_blocks = slice_size / min_block_size;

// Free blocks of page `pg`, one bit each, gathered from its lists or map;
// a list that disagrees with the page is reported.
struct free_set {
  std::uint64_t bits[max_blocks / 64] = {};
  std::uint32_t count = 0;

  void add(const page* pg, const void* b) {
    auto i =
        static_cast<std::size_t>(static_cast<const std::uint8_t*>(b) - pg->area) / pg->block_size;
    if ((bits[i / 64] >> (i % 64) & 1) != 0) heap_corruption_at("block free twice", pg, b);
    bits[i / 64] |= std::uint64_t{1} << (i % 64);
    ++count;
  }
  bool has(std::size_t i) const { return (bits[i / 64] >> (i % 64) & 1) != 0; }
};

// Check a list page's free list of plain links: in the page, block starts,
// marked free, no loop.
void check_list_links(const page* pg) {
  std::uint32_t n = 0;
  for (const block* b = pg->free; b != nullptr; b = b->next) {
    auto offset = static_cast<std::size_t>(reinterpret_cast<const std::uint8_t*>(b) - pg->area);
    if (offset >= std::size_t{pg->capacity} * pg->block_size || offset % pg->block_size != 0)
      heap_corruption_at("free list link overwritten", pg, b);
    if (b->free_tag != free_tag_of(pg))
      heap_corruption_at("free block overwritten (use after free?)", pg, b);
    if (++n > pg->capacity) heap_corruption_at("free list loops (double free?)", pg, b);
  }
}

void check_page(page* pg, bool debug) {
  page_collect(pg);
  if (segment_of(pg)->huge) return;  // one block, live: nothing to compare
  bool checked = (pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0;
  free_set free;
  if (page_has_map(pg)) {
    std::uint64_t map = pg->free_map;
    if (pg->reserved < 64 && (map >> pg->reserved) != 0)
      heap_corruption_at("free map names blocks the page does not have", pg, pg->area);
    for (std::uint64_t m = map; m != 0; m &= m - 1)
      free.add(pg, pg->area + std::size_t(std::countr_zero(m)) * pg->block_size);
    if (pg->free != nullptr) {  // the hot block, counted in `used`
      if (map_block_bit(pg, pg->free) == 0)
        heap_corruption_at("hot block overwritten", pg, pg->free);
      free.add(pg, pg->free);
    }
    if (page_used(pg) + free.count - (pg->free != nullptr ? 1 : 0) != pg->reserved)
      heap_corruption_at("block counts disagree (a lost or doubly freed block)", pg, pg->area);
  } else {
    if (checked) {
      struct context {
        const page* pg;
        free_set* set;
        bool debug;
      } c{pg, &free, debug};
      checked_for_each_free(
          pg,
          [](const block* b, void* arg) {
            auto* ctx = static_cast<context*>(arg);
            if (b->free_tag != checked_free_tag(ctx->pg, b))
              heap_corruption_at("free block overwritten (use after free?)", ctx->pg, b);
            if (ctx->debug) debug_check_free_block(ctx->pg, b);
            ctx->set->add(ctx->pg, b);
          },
          &c);
    } else {
      check_list_links(pg);
      for (const block* b = pg->free; b != nullptr; b = b->next) free.add(pg, b);
    }
    if (page_used(pg) + free.count != pg->capacity)
      heap_corruption_at("block counts disagree (a lost or doubly freed block)", pg, pg->area);
  }
  if (!(checked && debug)) return;
  std::uint32_t carved = page_has_map(pg) ? pg->reserved : pg->capacity;
  for (std::size_t i = 0; i < carved; ++i)
    if (!free.has(i)) debug_block_size(pg, pg->area + i * pg->block_size, "double free");
}

}  // namespace

void heap_check(heap* h) noexcept {
  valgrind_quiet quiet;
  bool debug = debug_mode();
  for (page_queue& q : h->queues)
    for (page* pg = q.first; pg != nullptr; pg = pg->next) check_page(pg, debug);
  for (page* pg = h->full.first; pg != nullptr; pg = pg->next) check_page(pg, debug);
}

}  // namespace strata::heap
