// Free slow paths: the last block of a page, flagged pages, huge blocks, and
// frees from other threads, which wait in a per-thread array and are posted
// with one compare-exchange per destination page.
#include <atomic>

#include "heap/heap_internal.hpp"
#include "heap/sampling.hpp"
#include "heap/slice_bitmap.hpp"

namespace strata::heap {

namespace {

void report_foreign(void* p) noexcept {
  heap_corruption("free of a pointer strata did not allocate", p);
}
foreign_free_handler foreign_handler = report_foreign;

// Post the list head..tail of `count` blocks to the page's thread_free; wake
// its heap if full, or when its thread exited, have the abandoned segments looked at.
void post_blocks(page* pg, block* head, block* tail, std::uint32_t count) {
  // Read while our block keeps the page alive; acquire pairs with an adopting
  // thread's release, so its heap's set-up is seen before we signal it.
  heap* owner = pg->owner_heap.load(std::memory_order_acquire);
  std::uintptr_t word = pg->thread_free.load(std::memory_order_relaxed);
  do {
    tail->next = thread_free_blocks(word);
  } while (!pg->thread_free.compare_exchange_weak(
      word,
      ((word & ~thread_free_blocks_mask) + (std::uintptr_t{count} << thread_free_count_shift)) |
          reinterpret_cast<std::uintptr_t>(head),
      std::memory_order_release, std::memory_order_relaxed));
  // From here on the page may be gone: only what was read before is used.
  if (owner == nullptr) {
    abandoned_note_free();
    purger_start_if_needed();  // nobody else may be about to collect it
  } else if ((word & thread_free_full) != 0)
    owner->full_pages_have_remote.store(true, std::memory_order_relaxed);
}

void count_remote_frees(heap* me, const page* pg, std::uint32_t n) {
  me->counters.frees[pg->size_class].add(n);
  me->counters.cross_thread_frees.add(n);
}

// Blocks of this size and up that a thread frees into a page it does not own
// give their memory back at once: the owner may not enter the allocator for long.
constexpr std::size_t remote_purge_min = std::size_t{1} << 20;

// Check `b`, freed by this thread into another thread's page `pg`, and mark it
// as freed: report it when it is marked already (waiting to be posted, in
// thread_free or on the owner's list), or when it is no block start of the
// page. free_slow holds list page blocks unchecked, so the check is made here,
// where the page's lines are fetched anyway; the page cannot have gone while
// one of its blocks was live, so a page start no longer there means a stray pointer.
void mark_remote_free(const page* pg, block* b) {
  if (pg->slice_count == 0) report_invalid_free(pg, b);
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  std::uintptr_t tag;
  if ((word & page_is_checked) != 0) {
    tag = page_free_tag(pg, b);  // validated by free_checked (no page is checked otherwise)
  } else if ((word & page_is_map) != 0) {
    if (map_block_bit(pg, b) == 0) report_invalid_free(pg, b);
    tag = remote_map_tag_of(pg);
  } else {
    auto offset = reinterpret_cast<std::uintptr_t>(b) - reinterpret_cast<std::uintptr_t>(pg->area);
    if (!list_block_start(pg, b) ||
        offset >= std::uintptr_t{page_capacity_seen(pg)} * pg->block_size)
      report_invalid_free(pg, b);
    tag = free_tag_of(pg);
  }
  // One atomic exchange: of two threads posting one block at once, one finds it
  // marked (a read, then a write, let both through, and the page's remote list
  // then held the block twice, a cycle its owner collected forever).
  if (std::atomic_ref<std::uintptr_t>(b->free_tag).exchange(tag, std::memory_order_relaxed) == tag)
    report_double_free(pg, b);
}

// Blocks of one destination page gathered while a thread's pending frees are posted.
struct remote_batch {
  page* destination;
  block* head;
  block* tail;
  std::uint32_t count;
};
// Count the blocks of `batch` as freed by `me` (the flushing thread's heap) and post them.
void post_batch(heap* me, const remote_batch& batch) {
  count_remote_frees(me, batch.destination, batch.count);
  post_blocks(batch.destination, batch.head, batch.tail, batch.count);
}

// Slots of the table a flush gathers batches in: twice the size classes a
// program typically frees across, so pages rarely have to share one.
constexpr std::size_t flush_slots = 128;

// The table slot for `pg`: descriptors are 128 bytes apart, pages of one
// segment take consecutive ones.
std::size_t flush_slot(const page* pg) {
  auto x = reinterpret_cast<std::uintptr_t>(pg) / sizeof(page);
  return (x ^ (x >> 9)) % flush_slots;
}

// Hold `b` of `pg`, freed into another thread's page, among the pending frees
// of this thread, without touching the block: its cache line is likely still
// with the thread that wrote it. The flush counts it.
void hold_remote_free(thread_context* ctx, page* pg, block* b) {
  std::uint32_t n = ctx->remote_pending_count;
  ctx->remote_pending[n] = remote_pending_free{b, pg};
  ctx->remote_pending_count = n + 1;
  if (n + 1 == remote_pending_capacity) remote_flush_all(ctx);
}

// Hold `b`, freed into a page of another thread (`word` is the page's owner
// word), among this thread's pending frees; false when it must be posted now
// instead (see remote_free).
bool queue_remote_free(page* pg, block* b, std::uintptr_t word) {
  bool abandoned = (word & ~page_flag_mask) == 0;
  if (abandoned || pg->size_class == class_count || pg->block_size >= remote_purge_min)
    return false;
  heap* me = default_heap();
  if (me == nullptr) return false;
  thread_context* ctx = me->context;
  ctx->remote_pending_bytes += pg->block_size;
  hold_remote_free(ctx, pg, b);
  if (ctx->remote_pending_bytes >= remote_pending_max_bytes) remote_flush_all(ctx);
  return true;
}

// Free a block of a page owned by another thread, or by none (`word`, the
// page's owner word, is 0 but for flags when its thread exited).
void remote_free(page* pg, block* b, std::uintptr_t word) {
  if (queue_remote_free(pg, b, word)) return;
  // No heap to hold it, a block worth giving back now, or a page of an exited
  // thread, which nobody collects until the purge delay has passed.
  bool huge = pg->size_class == class_count;
  heap* me = default_heap();
  if (me != nullptr) count_remote_frees(me, pg, 1);
  if (huge) {
    if (thread_free_blocks(pg->thread_free.load(std::memory_order_relaxed)) != nullptr)
      report_double_free(pg, b);  // posted already, not yet collected by its owner
  } else {
    mark_remote_free(pg, b);
  }
  // Before the block is posted: from then on its owner may hand it out again.
  // (Map and huge blocks carry no fill that debug mode checks.)
  if (pg->block_size >= remote_purge_min && (huge || page_has_map(pg)))
    segment_purge_freed_block(b, pg->block_size);
  b->next = nullptr;
  post_blocks(pg, b, b, 1);
}

}  // namespace

void set_foreign_free_handler(foreign_free_handler handler) noexcept {
  foreign_handler = handler != nullptr ? handler : report_foreign;
}

void free_foreign(void* p) noexcept {
  if (p == nullptr) return;
  // A huge block aligned to the segment size or more starts past its
  // segment's first unit, where free's fast path does not look.
  if (segment* seg = segment_map::lookup(p); seg != nullptr && seg->huge)
    return free_slow(seg, &seg->pages[0], p);
  if (sampled_free(p)) return;
  foreign_handler(p);
}

namespace {

// Whether `p` starts a free slice of normal segment `seg` that held a page: a
// freed one-block page gives its slices back at once, so its block freed again
// lands here. Such a slice still holds memory, or, purged since (a small heap
// purges a one-block page's at once), is still the place of the page's class.
// (Read without the slice lock: it only picks the report.)
bool starts_freed_page(const segment* seg, const void* p) {
  auto offset = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) -
                                         reinterpret_cast<const std::uint8_t*>(seg));
  std::size_t slice = offset / slice_size;
  if (offset % slice_size != 0 || slice < header_slices || slice >= slice_count) return false;
  return slice_bitmap::count(seg->free_slices, slice, 1) == 1 &&
         (slice_bitmap::count(seg->dirty_slices, slice, 1) == 1 || seg->place_class[slice] != 0);
}

// The block of `pg` that freeing `p` gives back: `p` itself, or on a page that
// serves aligned requests the block an aligned pointer was placed in. Reports
// a pointer no block of the page was handed out as: into the segment header or
// an unused slice, past the blocks carved so far, or inside a block.
block* block_to_free(segment* seg, page* pg, void* p, std::uintptr_t word) {
  if (pg->slice_count == 0) {
    if (seg->huge && p == pg->area) report_double_free(pg, p);  // its segment waits in the cache
    if (!seg->huge && starts_freed_page(seg, p)) report_double_free(pg, p);
    report_invalid_free(pg, p);
  }
  if (seg->huge) {
    if (p != pg->area) report_invalid_free(pg, p);
    return static_cast<block*>(p);
  }
  auto* bytes = static_cast<std::uint8_t*>(p);
  if (bytes < pg->area || bytes >= pg->area + std::size_t{page_capacity_seen(pg)} * pg->block_size)
    report_invalid_free(pg, p);
  block* b = block_containing(pg, p);
  if (b == p) return b;
  // An aligned pointer is the first multiple of its alignment in its block, so
  // it lies less than its own lowest set bit past the block start.
  auto address = reinterpret_cast<std::uintptr_t>(p);
  if ((word & page_has_aligned) == 0 ||
      address - reinterpret_cast<std::uintptr_t>(b) >= (address & -address))
    report_invalid_free(pg, p);
  return b;
}

// Report `p` as a double free when its block `b` (not huge, validated by
// block_to_free) is free already: a map page's bit or hot slot, which only the
// owner may read, or a list block's free mark.
void report_if_free(const page* pg, const block* b, std::uintptr_t word, const void* p) {
  if (page_has_map(pg)) {
    if ((word & ~page_flag_mask) != os::thread_id()) return;
    if ((pg->free_map & map_bit(pg, b)) != 0 || pg->free == b) report_double_free(pg, p);
  } else if (b->free_tag == page_free_tag(pg, b)) {
    report_double_free(pg, p);
  }
}

// Free huge block `p` of this thread: its segment goes to the cache.
void free_huge_owned(heap* h, page* pg) {
  pg->counts = 0;
  h->counters.frees[class_count].add(1);
  page_free(h, pg);
  purger_start_if_needed();
}

// Free `p` into page `pg` of segment `seg` with every check: pointers of any
// kind, pages of this thread, checked, huge and abandoned pages. Kept out of
// free_slow, whose usual case (another thread's block, held for later) then
// saves and restores no registers: 14 instructions less per remote free.
__attribute__((noinline)) void free_checked(segment* seg, page* pg, void* p) {
  // Past a segment's mapping (a normal segment maps its range in steps, a
  // huge one ends with its block) another mapping may lie: not strata's.
  if (static_cast<std::uint8_t*>(p) >=
      reinterpret_cast<std::uint8_t*>(seg) + segment_mapped_bytes(seg))
    return foreign_handler(p);
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  block* b = block_to_free(seg, pg, p, word);
  std::uintptr_t owner = word & ~page_flag_mask;
  // Into an unchecked page of another thread (a map page, an aligned pointer:
  // free_slow held the rest) no block is read: memcheck need not be quietened.
  if (owner != os::thread_id() && (word & page_is_checked) == 0 && queue_remote_free(pg, b, word))
    return;
  valgrind_quiet quiet;
  if ((word & page_is_checked) != 0 && debug_mode()) debug_block_freed(pg, b);
  if (seg->huge && debug_mode()) debug_note_huge(b, 0, false);
  if (owner == os::thread_id()) {
    heap* h = pg->owner_heap.load(std::memory_order_relaxed);
    if (page_live(pg) == 0) report_double_free(pg, p);
    if (seg->huge) return free_huge_owned(h, pg);
    report_if_free(pg, b, word, p);
    if ((word & page_is_checked) != 0) {
      checked_free_owned(pg, b);
    } else if (page_has_map(pg)) {
      page_give(pg, b, map_bit(pg, b));
    } else {
      b->next = pg->free;
      b->free_tag = free_tag_of(pg);
      pg->free = b;
      pg->counts += owner_free_step;  // the page's stats fold counts this free
    }
    // A page left empty goes straight from the full list to page_emptied, which
    // frees or retains it: no requeueing first.
    if (page_live(pg) == 0)
      page_emptied(h, pg);
    else if ((word & page_in_full) != 0)
      page_unfull(h, pg);
    return;
  }
  if (owner == 0 && seg->huge) {  // its thread exited: nobody else will free it
    heap* me = default_heap();
    if (me != nullptr) me->counters.frees[class_count].add(1);
    huge_segment_release(seg);
    purger_start_if_needed();
    return;
  }
  remote_free(pg, b, word);
}

// The owner frees `p` into `pg`, one of its map pages on the full list, whose
// flag sent the free here: a full page has no hot block, so the block takes
// that slot (page_give) and the page rejoins its queue or, left empty, goes.
// The checks of any pointer's free (free_checked) cost 150 instructions more,
// and a map page of 8 blocks comes here for one malloc in ten of a working set
// of random sizes (heap/random-working-set).
void free_into_full_map(segment* seg, page* pg, void* p) {
  std::uint64_t index;
  if (!map_block_start(pg, p, index) || ((pg->free_map >> index) & 1) != 0 || pg->free != nullptr)
    return free_checked(seg, pg, p);  // reports the pointer, or frees it the long way
  page_give(pg, p, std::uint64_t{1} << index);
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  if (page_live(pg) == 0)
    page_emptied(h, pg);
  else
    page_unfull(h, pg);
}

}  // namespace

void free_slow(segment* seg, page* pg, void* p) noexcept {
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  std::uintptr_t owner = word & ~page_flag_mask;
  heap* me = tls_entry.own_heap;
  // The usual free from another thread: a list page with no aligned pointers,
  // unchecked, not a huge block, of a live thread or of an exited one (a live
  // page: a freed page's slice reads owner 0 too). Held at once; the flush
  // validates it, when the page's lines are fetched anyway, and posts each
  // page's blocks with one compare-exchange (short-lived threads that free
  // what exited ones allocated paid one each, and a full check, per block).
  if ((word & (page_is_map | page_is_checked | page_has_aligned)) == 0 &&
      (owner != 0 || pg->slice_count != 0) && owner != os::thread_id() &&
      pg->size_class != class_count && me != &empty_heap)
    return hold_remote_free(me->context, pg, static_cast<block*>(p));
  if (word == (os::thread_id() | page_is_map | page_in_full) && pg->slice_count != 0)
    return free_into_full_map(seg, pg, p);
  free_checked(seg, pg, p);
}

block* check_live_block(void* p) noexcept {
  segment* seg = segment_map::lookup(p);
  if (seg == nullptr) return nullptr;
  page* pg = seg->huge ? &seg->pages[0] : seg->page_of(p);
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  block* b = block_to_free(seg, pg, p, word);
  if (!seg->huge) report_if_free(pg, b, word, p);
  return b;
}

void report_double_free(const page* pg, const void* p) noexcept {
  heap_corruption_at("double free", pg, p);
}

void report_invalid_free(const page* pg, const void* p) noexcept {
  heap_corruption_at("free of a pointer strata did not hand out (interior or stray)", pg, p);
}

void free_double(const page* pg, const void* p) noexcept {
  report_double_free(pg, p);
}

void free_invalid(const page* pg, const void* p) noexcept {
  report_invalid_free(pg, p);
}

void page_emptied_by_owner(page* pg) noexcept {
  if (page_used(pg) > pg->reserved || page_live(pg) > pg->reserved)
    heap_corruption_at("double free", pg, pg->free);
  if (page_live(pg) == 0) page_emptied(pg->owner_heap.load(std::memory_order_relaxed), pg);
}

// The 2^32 frees lost from page::counts (and the mallocs derived from them)
// go to the heap's counters.
void page_owner_frees_wrapped(page* pg, std::uint64_t counts) noexcept {
  pg->counts = counts;
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  h->counters.mallocs[pg->size_class].add(std::uint64_t{1} << 32);
  h->counters.frees[pg->size_class].add(std::uint64_t{1} << 32);
  if (page_free_is_event(pg, page_used(pg))) page_emptied_by_owner(pg);
}

// Blocks ahead of the one being marked whose cache lines a flush has asked
// for: enough to keep the memory system busy, few enough that it keeps up.
constexpr std::uint32_t prefetch_distance = 16;

// Post every block the thread freed into other threads' pages: check and mark
// each, fetching the cache lines of those ahead meanwhile, then hand each
// destination page its blocks with one compare-exchange.
void remote_flush_all(thread_context* ctx) {
  std::uint32_t n = ctx->remote_pending_count;
  ctx->remote_pending_count = 0;
  ctx->remote_pending_bytes = 0;
  valgrind_quiet quiet;  // the blocks are the program's freed ones (debug mode tells memcheck)
  for (std::uint32_t i = 0; i < n && i < prefetch_distance; ++i)
    __builtin_prefetch(ctx->remote_pending[i].b, 1);
  heap* me = &ctx->main_heap;
  remote_batch batches[flush_slots] = {};
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i + prefetch_distance < n)
      __builtin_prefetch(ctx->remote_pending[i + prefetch_distance].b, 1);
    auto [b, pg] = ctx->remote_pending[i];
    mark_remote_free(pg, b);
    remote_batch& batch = batches[flush_slot(pg)];
    if (batch.destination != pg) {
      if (batch.count != 0) post_batch(me, batch);
      batch = remote_batch{pg, nullptr, b, 0};
    }
    b->next = batch.head;
    batch.head = b;
    batch.count++;
  }
  for (remote_batch& batch : batches)
    if (batch.count != 0) post_batch(me, batch);
}

}  // namespace strata::heap
