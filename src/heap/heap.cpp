// The heap's allocation slow paths: refill a size class, carve a new page,
// huge blocks, aligned blocks, and in-place resizing.
#include "heap/heap.hpp"

#include <algorithm>
#include <cerrno>

#include "heap/heap_internal.hpp"
#include "heap/sampling.hpp"
#include "heap/stats_internal.hpp"

namespace strata::heap {

constinit page empty_page{};
constinit heap empty_heap;
constinit thread_local thread_entry tls_entry
    __attribute__((tls_model(STRATA_TLS_MODEL))) = {&empty_heap, 0};

namespace {

// Fresh memory a thread faults in, without reusing any, before it takes over
// emptied segments of the other page kind that still hold memory.
constexpr std::size_t other_kind_after_bytes = std::size_t{8} << 20;

// Bytes of blocks carved per extension: twice what the page has carved so far,
// from one OS page up to 16 KiB (4, 8, 16, 16 ...). A class a program uses a
// few blocks of touches little memory (python3 -c pass peaked 128 KiB higher
// when the second carve was 16 KiB), a page used whole fills in one more step,
// and carving never commits a whole 64 KiB page of blocks at once.
// While the heap is small, one OS page at a time: a small program's classes
// then each hold under a page of blocks carved and never used (python3 -c
// pass held 64 KiB more with the doubling), and its refills are few anyway.
constexpr std::size_t extend_bytes = 16384;
constexpr std::size_t first_extend_bytes = 4096;

// Slices of a page for `cls`: one 64 KiB slice up to 8 KiB blocks, then room
// for about eight blocks up to 64 KiB ones; a larger block has a page to itself.
constexpr std::size_t page_slices(std::size_t cls) {
  std::size_t size = class_block_size(cls);
  if (size <= 8192) return 1;
  if (single_block_class(cls)) return (size + slice_size - 1) / slice_size;
  return (size * 8 + slice_size - 1) / slice_size;
}
// The 4 and 8 KiB powers of two have classes cut to fill pages of 64 and 128 KiB.
static_assert(page_slices(size_class_of(4097)) == 1 && page_slices(size_class_of(8192)) == 1);
static_assert(page_slices(size_class_of(8193)) == 2 && page_slices(size_class_of(16384)) == 2);
static_assert(page_slices(size_class_of(65536)) == 8 && page_slices(size_class_of(65537)) == 2);
// A list page is one slice: free finds its descriptor without a lookup (heap_free).
static_assert(page_slices(size_class_of(list_max_request)) == 1);

// Carve the next few blocks of the page onto its (empty) free list.
void page_extend(page* pg) {
  std::uint32_t n = pg->reserved - pg->capacity;
  // (List page blocks are under 4 KiB: at least one is carved.)
  std::size_t carved = std::size_t{pg->capacity} * pg->block_size;
  std::size_t largest = heap_is_small() ? first_extend_bytes : extend_bytes;
  std::size_t most = std::clamp(2 * carved, first_extend_bytes, largest) / pg->block_size;
  if (n > most) n = static_cast<std::uint32_t>(most);
  std::uint8_t* first = pg->area + pg->capacity * pg->block_size;
  // Carved blocks carry the free mark too: freeing one never handed out is caught.
  for (std::uint32_t i = 0; i < n; ++i) {
    auto* b = reinterpret_cast<block*>(first + i * pg->block_size);
    b->next = i + 1 < n ? reinterpret_cast<block*>(first + (i + 1) * pg->block_size) : pg->free;
    b->free_tag = free_tag_of(pg);
  }
  pg->free = reinterpret_cast<block*>(first);
  page_capacity_grow(pg, n);
}

// A page's block size and the inverse that finds a block's index by a multiply.
void page_set_block_size(page* pg, std::size_t size) {
  pg->block_size = size;
  pg->block_inverse = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) + size - 1) / size);
}

// Set up a page descriptor for `cls` over slices [first, first + count).
page* page_init(heap* h, segment* seg, std::size_t first, std::size_t count, std::size_t cls) {
  page* pg = &seg->pages[first];
  pg->free = nullptr;
  pg->counts = 0;
  pg->size_class = static_cast<std::uint32_t>(cls);
  // A one-block page's block reaches to the page's end: malloc_usable_size
  // says so, and realloc grows into it without a move.
  page_set_block_size(pg, single_block_class(cls) ? count * slice_size : class_block_size(cls));
  pg->thread_free.store(0, std::memory_order_relaxed);
  pg->owner_heap.store(h, std::memory_order_relaxed);
  pg->area = seg->slice_start(first);
  pg->capacity = 0;
  pg->mallocs = 0;
  pg->used_at_fold = 0;
  pg->retained_slot = 0;
  pg->reserved = static_cast<std::uint32_t>(count * slice_size / pg->block_size);
  pg->free_map = 0;
  if (page_has_map(pg)) {  // every block free at once: nothing is written into them
    pg->free_map = (std::uint64_t{1} << pg->reserved) - 1;
    pg->capacity = pg->reserved;
  }
  pg->slice_index = static_cast<std::uint32_t>(first);
  pg->slice_count = static_cast<std::uint32_t>(count);
  pg->next = pg->prev = nullptr;
  page_set_first_in_queue(pg, false);
  pg->owner.store(h->context->thread_id | (page_has_map(pg) ? page_is_map : 0) |
                      (checked_mode() ? page_is_checked : 0),
                  std::memory_order_relaxed);
  return pg;
}

// A new page for `cls` from one of the thread's segments, adding segments
// (adopted from exited threads, cached or fresh) until one has a long enough
// run. Memory not yet purged goes first, even in a cached segment: reusing it
// costs no page faults, where clean slices fault in every page they use.
// Pages of one block and pages of many come from segments of their own kind:
// the many-block pages a class keeps for its next blocks then never take the
// place a one-block page had, and a phase that frees and reallocates large
// blocks finds each where it lay before (unified/small faulted 4,000 pages
// again in its second round when the two shared segments). A page goes to a
// segment of the other kind only once its kind keeps faulting memory in (see
// take_other_kind) or the OS refuses a new segment. `zeroed`, when given, says
// whether the page's memory reads as zeros (see segment_claim_slices).
page* page_alloc(heap* h, std::size_t cls, bool* zeroed) {
  thread_context* ctx = h->context;
  std::size_t count = page_slices(cls);
  bool single = single_block_class(cls);
  bool any_kind = false;  // once the OS refuses a new segment
  auto claim = [&](slice_claim which, bool either_kind) -> page* {
    for (segment* seg = ctx->segments; seg != nullptr; seg = seg->next) {
      if (seg->single_block_pages != single && !either_kind) continue;
      std::size_t first = segment_claim_slices(seg, count, cls, which, zeroed);
      if (first != 0) return page_init(h, seg, first, count, cls);
    }
    return nullptr;
  };
  // Before slices that fault memory in, give back the current pages of this
  // kind left empty: their slices may serve, and RSS stays down. Retained
  // pages stay, within their budget: a program that alternates between a few
  // classes then keeps its pages instead of each phase re-carving the last
  // one's. A one-slice page frees only one-slice pages: carving a large
  // class's page for it would send that class's next malloc to fresh memory.
  // The one-block pages each class keeps go only after the cached segments
  // still holding memory: a phase reallocating its blocks finds them in place.
  auto release_empty = [&] {
    return thread_free_empty_current_pages(ctx, count == 1 ? 1 : slice_count, single);
  };
  // Memory the other kind's segments still hold is taken once this thread
  // keeps faulting fresh memory in: its emptied segments, cached or not, and
  // then its free runs. A phase of small blocks after one of large blocks
  // reuses theirs, yet a repeated phase whose small pages need a slice more
  // than last time leaves the large pages' segments alone.
  auto take_other_kind = [&] {
    return thread_convert_empty_segment(ctx, single) ||
           thread_acquire_dirty_segment(ctx, single, true) != nullptr;
  };
  // How much fresh memory the thread faulted in lately, net of what it
  // reused: pages carved from fresh slices add, pages on reused ones take
  // away, and it saturates at twice the threshold, so a long first phase is
  // forgotten after a few MiB of reuse.
  auto note_carved = [&](page* pg, bool fresh) {
    std::size_t bytes = count * slice_size;
    std::size_t& net = ctx->fresh_bytes[single];
    if (fresh)
      net = net + bytes < 2 * other_kind_after_bytes ? net + bytes : 2 * other_kind_after_bytes;
    else
      net = net > bytes ? net - bytes : 0;
    return pg;
  };
  // Memory not yet purged: a page of many blocks first where a page of its
  // class began before, in whichever of the thread's segments, then any run.
  // One-block pages go lowest first (see place_run), which lays a repeated
  // phase out as its first round did.
  auto claim_dirty = [&](bool either_kind) {
    page* pg = single ? nullptr : claim(slice_claim::class_place, either_kind);
    if (pg == nullptr) pg = claim(slice_claim::dirty, either_kind);
    return pg != nullptr ? note_carved(pg, false) : nullptr;
  };
  auto claim_fresh = [&](slice_claim which) {
    page* pg = claim(which, any_kind);
    return pg != nullptr ? note_carved(pg, true) : nullptr;
  };
  bool released = false;
  for (;;) {
    if (page* pg = claim_dirty(any_kind)) return pg;
    if (!released && !single) {
      released = true;
      if (release_empty()) continue;
    }
    if (thread_acquire_dirty_segment(ctx, single, false) != nullptr) continue;
    if (!released) {
      released = true;
      if (release_empty()) continue;
    }
    // Once begun, the take-over goes on as the taken memory runs out, until
    // none is left: reusing it must not make the kind fault memory in again first.
    bool& taking_over = ctx->taking_over[single];
    if (taking_over || ctx->fresh_bytes[single] >= other_kind_after_bytes) {
      taking_over = true;
      if (take_other_kind()) continue;
      if (page* pg = claim_dirty(true)) return pg;
      taking_over = false;
    }
    if (page* pg = claim_fresh(slice_claim::mapped)) return pg;
    if (page* pg = claim_fresh(slice_claim::growing)) return pg;
    if (thread_acquire_segment(ctx, single) != nullptr) continue;
    if (any_kind) return nullptr;
    any_kind = true;
  }
}

// Whether the page can hand out a block, carving more of a list page if needed.
bool page_has_block(page* pg) {
  if ((pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0)
    return checked_has_block(pg);
  if (page_has_map(pg)) return pg->free_map != 0 || pg->free != nullptr;
  if (pg->free == nullptr && pg->capacity < pg->reserved) page_extend(pg);
  return pg->free != nullptr;
}

}  // namespace

// Setting the full bit with a compare-exchange on thread_free means a freeing
// thread either sees the bit (and signals the heap) or its blocks stop this.
bool page_to_full(heap* h, page* pg) {
  std::uintptr_t word = pg->thread_free.load(std::memory_order_relaxed);
  do {
    if (thread_free_blocks(word) != nullptr) return false;
  } while (!pg->thread_free.compare_exchange_weak(word, word | thread_free_full,
                                                  std::memory_order_relaxed));
  queue_remove(h->queues[pg->size_class], pg);
  queue_push_back(h->full, pg);
  pg->owner.store(pg->owner.load(std::memory_order_relaxed) | page_in_full,
                  std::memory_order_relaxed);
  return true;
}

void one_block_page_taken(heap* h, page* pg, std::size_t cls) {
  if (single_block_class(cls) && page_to_full(h, pg)) heap_set_current(h, cls);
}

page* find_page(heap* h, std::size_t cls, bool* zeroed) {
  page_queue& q = h->queues[cls];
  for (;;) {
    for (page* pg = q.first; pg != nullptr;) {
      page* next = pg->next;
      // A list page with free blocks serves those first; what other threads
      // freed meanwhile waits until it runs dry, when collecting takes the
      // list whole (appending it now would walk it, a miss per block).
      if (pg->free == nullptr || page_has_map(pg)) page_collect(pg);
      page_fold_stats(h, pg);
      if (page_live(pg) == 0) retained_forget(h->context, pg);  // an emptied page serves again
      if (page_has_block(pg)) {
        if (q.first != pg) {
          queue_remove(q, pg);
          queue_push_front(q, pg);
        }
        heap_set_current(h, cls);
        return pg;
      }
      if (!page_to_full(h, pg)) continue;  // freed into meanwhile: collect again
      pg = next;
    }
    // A thread's first page: pages of exited threads may serve instead.
    if (h->context->segment_count == 0 && thread_adopt_abandoned(h->context) && q.first != nullptr)
      continue;
    // Blocks other threads freed into full pages serve before a new page does:
    // a heap the OS refuses more memory still gets them back.
    if (h->full_pages_have_remote.load(std::memory_order_relaxed)) {
      heap_requeue_remote_full(h);
      if (q.first != nullptr) continue;
    }
    page* pg = page_alloc(h, cls, zeroed);
    if (pg == nullptr) return nullptr;
    page_has_block(pg);  // carve the first blocks of a list page
    queue_push_front(q, pg);
    heap_set_current(h, cls);
    return pg;
  }
}

void page_settle(heap* h, page* pg) {
  if (!page_has_map(pg) || pg->free != nullptr || h->current[pg->size_class] == pg) return;
  // A full page has none to give; a checked page keeps no hot block.
  if ((pg->owner.load(std::memory_order_relaxed) & (page_in_full | page_is_checked)) != 0) return;
  for (;;) {
    if ((pg->free = map_take_lowest(pg)) != nullptr) return;
    if (page_to_full(h, pg)) return;
    page_collect(pg);  // other threads freed into it meanwhile
  }
}

namespace {
// Hand out the block of huge segment `seg`, just acquired for `size` bytes, from `h`.
void* own_huge_block(heap* h, segment* seg, std::size_t size) noexcept {
  page* pg = &seg->pages[0];
  pg->owner_heap.store(h, std::memory_order_relaxed);
  pg->owner.store(h->context->thread_id | page_in_full, std::memory_order_relaxed);
  pg->thread_free.store(thread_free_full, std::memory_order_relaxed);
  queue_push_back(h->full, pg);
  h->counters.mallocs[class_count].add(1);
  if (debug_mode()) debug_note_huge(pg->area, size, true);
  return pg->area;
}

// One-block requests from this size up (half the largest class) take a huge
// block that a freed one left in the cache still holding its memory, rather
// than pages of fresh memory beside it: a program that frees big blocks of
// all sizes then reuses one region, as glibc does. Such a mapping holds at
// most a segment, so at most eight times the block stays resident while it
// lives (xsigma/large-block-loop held 41 MB, glibc 25, when 5-8 MiB pages
// were faulted in beside the 25 MB mapping the larger blocks left). Not for a
// class that gave a page of its own back: its memory is where that page was,
// and taking a mapping a larger block will ask for again made a phase of 16
// live 1-10 MiB blocks map 19 MiB anew in its second round. Not in debug mode,
// whose aligned blocks point inside the block they over-allocate.
constexpr std::size_t huge_reuse_min = medium_max / 2;

// A block of `size` bytes in a cached huge mapping still holding its memory;
// null when there is none.
void* malloc_reusing_huge(heap* h, std::size_t size) noexcept {
  segment* seg = huge_segment_reuse(size);
  if (seg == nullptr) return nullptr;
  void* b = own_huge_block(h, seg, size);
  thread_deferred_work(h);  // after taking the segment, so it is not purged first
  return b;
}
}  // namespace

namespace {
// malloc's slow path; with `zeroed`, also whether the block is known to read
// as zeros (the first block of a page made of memory fresh from the OS).
inline __attribute__((always_inline)) void* refill(heap* h, std::size_t size,
                                                   bool* zeroed) noexcept {
  purger_start_if_needed();  // first: pthread_create's own malloc then finds the heap as it is
  if (checked_mode()) return checked_malloc(h, size);
  std::size_t cls = size_class_of(size);
  note_class_asked(h, cls);
  if (size >= huge_reuse_min && h->queues[cls].first == nullptr &&
      (h->single_released & single_class_bit(cls)) == 0 && !debug_mode()) {
    if (void* b = malloc_reusing_huge(h, size)) return b;
  }
  page* pg = find_page(h, cls, zeroed);
  if (pg == nullptr) return allocation_error(ENOMEM, "malloc", size, 0);
  void* b = page_has_map(pg) ? page_take(pg) : page_pop(pg);
  one_block_page_taken(h, pg, cls);
  thread_deferred_work(h);  // after the reuse: a purge never takes memory about to be used
  return b;
}
}  // namespace

void* malloc_refill(heap* h, std::size_t size) noexcept {
  if (h == &empty_heap) {
    h = thread_heap_init();
    if (h == nullptr) return allocation_error(ENOMEM, "malloc", size, 0);
    return heap_malloc(h, size);
  }
  return refill(h, size, nullptr);
}

void* malloc_one_block_zeroed(heap* h, std::size_t size, bool* zeroed) noexcept {
  *zeroed = false;
  if (h == &empty_heap && (h = thread_heap_init()) == nullptr)
    return allocation_error(ENOMEM, "malloc", size, 0);
  // A page the class keeps serves first, as on malloc's fast path; its block was used.
  if (void* b = page_take(h->current[size_class_of(size)])) return b;
  return refill(h, size, zeroed);
}

void* malloc_huge(heap* h, std::size_t size, std::size_t alignment) noexcept {
  bool zeroed;
  return malloc_huge_zeroed(h, size, alignment, &zeroed);
}

void* malloc_huge_zeroed(heap* h, std::size_t size, std::size_t alignment, bool* zeroed) noexcept {
  *zeroed = false;
  if (h == &empty_heap && (h = thread_heap_init()) == nullptr)
    return allocation_error(ENOMEM, "malloc", size, alignment);
  purger_start_if_needed();
  segment* seg = huge_segment_acquire(size, alignment, zeroed);
  thread_deferred_work(h);  // after taking a cached segment, so it is not purged first
  if (seg == nullptr) return allocation_error(ENOMEM, "malloc", size, alignment);
  return own_huge_block(h, seg, size);
}

void* heap_malloc_aligned(heap* h, std::size_t size, std::size_t alignment) noexcept {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return allocation_error(EINVAL, "malloc_aligned", size, alignment);
  if (alignment <= min_block_size) return heap_malloc(h, size);
  // A huge segment places its block at any alignment below the segment size.
  if (size > medium_max || alignment > slice_size) return malloc_huge(h, size, alignment);
  // Blocks start at a multiple of their size from a 64 KiB-aligned page start,
  // so a class whose size is a multiple of the alignment is aligned for free.
  std::size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  // (Not in debug mode, where each block also holds a size record and so
  // comes from a larger class.)
  if (rounded <= medium_max && class_block_size(size_class_of(rounded)) % alignment == 0 &&
      !debug_mode())
    return heap_malloc(h, rounded);
  // Otherwise over-allocate and hand out an aligned pointer inside the block.
  if (size + alignment - 1 > medium_max) return malloc_huge(h, size, alignment);
  auto* raw = static_cast<std::uint8_t*>(heap_malloc(h, size + alignment - 1));
  if (raw == nullptr) return nullptr;
  page* pg = segment_of(raw)->page_of(raw);
  pg->owner.store(pg->owner.load(std::memory_order_relaxed) | page_has_aligned,
                  std::memory_order_relaxed);
  auto aligned = (reinterpret_cast<std::uintptr_t>(raw) + alignment - 1) & ~(alignment - 1);
  return reinterpret_cast<void*>(aligned);
}

std::size_t usable_size(const void* p) noexcept {
  segment* seg = segment_map::lookup(p);
  if (p == nullptr) return 0;
  if (seg == nullptr) return sampled_usable_size(p);
  if (seg->huge)
    return seg->pages[0].block_size -
           static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - seg->pages[0].area);
  page* pg = seg->page_of(p);
  const std::uint8_t* start = reinterpret_cast<std::uint8_t*>(block_containing(pg, p));
  auto offset = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - start);
  // In debug mode a block holds what was asked for; a canary and record fill
  // the rest. A freed block's fill has taken its record: nothing to answer.
  if ((pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0 && debug_mode())
    return debug_block_size(pg, start, "usable size asked of a freed block (use after free)") -
           offset;
  return pg->block_size - offset;
}

void* huge_move(void* p, std::size_t size) noexcept {
  segment* seg = segment_map::lookup(p);
  // In secure mode a guard page ends the mapping: the block is copied instead.
  if (seg == nullptr || !seg->huge || size > largest_request() || secure_mode()) return nullptr;
  page* pg = &seg->pages[0];
  if (pg->area >= seg->slice_start(slice_count)) return nullptr;  // far-aligned: not moved
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  if ((word & ~page_flag_mask) != os::thread_id() || p != pg->area) return nullptr;
  auto offset = static_cast<std::size_t>(pg->area - reinterpret_cast<std::uint8_t*>(seg));
  std::size_t os_page = os::page_size();
  std::size_t total = (offset + size + os_page - 1) & ~(os_page - 1);
  std::size_t old_size = seg->size;
  if (total <= old_size) return nullptr;
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  queue_remove(h->full, pg);
  // Out of the map first: once moved, the old range may hold another thread's segment.
  segment_map::remove(seg);
  auto* moved = static_cast<segment*>(os::move_aligned(seg, old_size, total, segment_size));
  if (moved == nullptr) {
    segment_map::add(seg);
    queue_push_back(h->full, pg);
    return nullptr;
  }
  segment_map::add(moved);
  std::size_t grow = total - old_size;
  global_stats::reserved.fetch_add(grow, std::memory_order_relaxed);
  global_stats::huge_in_use.fetch_add(grow, std::memory_order_relaxed);
  global_stats::commit(grow);
  segment_set_mapped_bytes(moved, total);
  pg = &moved->pages[0];
  pg->area = reinterpret_cast<std::uint8_t*>(moved) + offset;
  pg->block_size = total - offset;
  queue_push_back(h->full, pg);
  return pg->area;
}

namespace {
// Grow the block of `pg`, a one-block page of this thread, to `size` bytes
// (above what it holds, at most the largest class) by adding the free slices
// right after it: the page takes the class of its new length. A vector or
// string that a program grows by realloc then stays where it is, where a move
// at each step left a hole the next, larger step could not use (a Python
// list of 200,000 items took fresh memory at nearly every step).
bool grow_one_block_page(segment* seg, page* pg, std::size_t size) {
  std::size_t old_cls = pg->size_class;
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  if (size > medium_max || old_cls >= class_count || !single_block_class(old_cls) ||
      (word & ~page_flag_mask) != os::thread_id() || (word & page_is_checked) != 0 ||
      thread_free_blocks(pg->thread_free.load(std::memory_order_relaxed)) != nullptr)
    return false;
  std::size_t cls = size_class_of(size);
  std::size_t count = page_slices(cls);
  if (!segment_extend_page(seg, pg, count - pg->slice_count)) return false;
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  // No longer a page of its old class: one it kept or allocated from goes to
  // the full list, as a one-block page holding its block does.
  if ((word & page_in_full) == 0) {
    retained_forget(h->context, pg);
    page_to_full(h, pg);  // (nobody else freed into it: checked above)
    if (h->current[old_cls] == pg) heap_set_current(h, old_cls);
  }
  // Counted as a free of the old class and a malloc of the new one.
  page_fold_stats(h, pg);
  h->counters.frees[old_cls].add(1);
  h->counters.mallocs[cls].add(1);
  pg->size_class = static_cast<std::uint32_t>(cls);
  pg->slice_count = static_cast<std::uint32_t>(count);
  page_set_block_size(pg, count * slice_size);
  return true;
}
}  // namespace

bool expand_in_place(void* p, std::size_t size) noexcept {
  segment* seg = segment_map::lookup(p);
  if (seg == nullptr || size > largest_request()) return false;
  std::size_t usable = usable_size(p);
  if (size <= usable) return true;
  if (!seg->huge) {
    page* pg = seg->page_of(p);
    return p == pg->area && grow_one_block_page(seg, pg, size);
  }
  if (secure_mode()) return false;  // a guard page ends the mapping
  // A huge block grows when the address space after its segment is free.
  page* pg = &seg->pages[0];
  std::size_t os_page = os::page_size();
  std::size_t grow = (size - usable + os_page - 1) & ~(os_page - 1);
  if (!os::extend_in_place(seg, seg->size, seg->size + grow)) return false;
  global_stats::reserved.fetch_add(grow, std::memory_order_relaxed);
  global_stats::huge_in_use.fetch_add(grow, std::memory_order_relaxed);
  global_stats::commit(grow);
  segment_set_mapped_bytes(seg, seg->size + grow);
  pg->block_size += grow;
  return true;
}

}  // namespace strata::heap
