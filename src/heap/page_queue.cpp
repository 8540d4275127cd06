// Page queues and page state changes: collect, full/unfull, emptied, freed.
#include "heap/heap_internal.hpp"
#include "heap/stats_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

void queue_push_back(page_queue& q, page* pg) {
  pg->next = nullptr;
  pg->prev = q.last;
  if (q.last != nullptr)
    q.last->next = pg;
  else
    q.first = pg;
  q.last = pg;
  page_set_first_in_queue(pg, q.first == pg);
}

void queue_push_front(page_queue& q, page* pg) {
  pg->prev = nullptr;
  pg->next = q.first;
  if (q.first != nullptr) {
    q.first->prev = pg;
    page_set_first_in_queue(q.first, false);
  } else {
    q.last = pg;
  }
  q.first = pg;
  page_set_first_in_queue(pg, true);
}

void queue_push_second(page_queue& q, page* pg) {
  if (q.first == nullptr) return queue_push_back(q, pg);
  pg->prev = q.first;
  pg->next = q.first->next;
  if (pg->next != nullptr)
    pg->next->prev = pg;
  else
    q.last = pg;
  q.first->next = pg;
  page_set_first_in_queue(pg, false);
}

void queue_remove(page_queue& q, page* pg) {
  if (pg->prev != nullptr) {
    pg->prev->next = pg->next;
  } else {
    q.first = pg->next;
    if (q.first != nullptr) page_set_first_in_queue(q.first, true);
  }
  if (pg->next != nullptr)
    pg->next->prev = pg->prev;
  else
    q.last = pg->prev;
  pg->next = pg->prev = nullptr;
  page_set_first_in_queue(pg, false);
}

void heap_set_current(heap* h, std::size_t cls) {
  page* pg = h->queues[cls].first != nullptr ? h->queues[cls].first : &empty_page;
  if (checked_mode()) pg = &empty_page;  // every malloc takes the checked slow path
  h->current[cls] = pg;
  if (class_block_size(cls) > small_max) return;
  std::size_t first_slot = cls == 0 ? 0 : class_block_size(cls - 1) / 16 + 1;
  for (std::size_t slot = first_slot; slot <= class_block_size(cls) / 16; ++slot)
    h->direct[slot] = pg;
}

std::uint32_t page_collect(page* pg) {
  std::uintptr_t word = pg->thread_free.load(std::memory_order_relaxed);
  if (thread_free_blocks(word) == nullptr) return 0;
  // Only the owner changes the full bit, so it can be written back as it is.
  word = pg->thread_free.exchange(word & thread_free_full, std::memory_order_acquire);
  block* list = thread_free_blocks(word);
  std::uint32_t n = thread_free_count(word);
  if (page_has_map(pg)) {
    for (block* b = list; b != nullptr; b = b->next) {
      // Freed by another thread while free here too (in the map or the hot slot).
      std::uint64_t bit = map_bit(pg, b);
      if ((pg->free_map & bit) != 0 || pg->free == b) heap_corruption_at("double free", pg, b);
      pg->free_map |= bit;
      b->free_tag = 0;  // map blocks are handed out as they are: no stale free mark
    }
  } else if ((pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0) {
    checked_collect(pg, list);
  } else if (pg->free == nullptr) {
    // The usual case, a page that ran dry: the list is taken whole, unread;
    // walking it would wait on each block's cache line in turn.
    pg->free = list;
  } else {
    block* tail = list;
    while (tail->next != nullptr) tail = tail->next;
    tail->next = pg->free;
    pg->free = list;
  }
  pg->counts -= n;
  pg->used_at_fold -= n;  // the freeing threads counted these
  return n;
}

void page_fold_stats(heap* h, page* pg) {
  std::size_t cls = pg->size_class;
  if (cls == class_count) return;  // huge blocks are counted as they come and go
  // Blocks out now less blocks out at the last fold is mallocs less owner
  // frees: a list page counts its frees, a map page its mallocs.
  std::uint32_t live = page_live(pg);
  auto net =
      static_cast<std::uint64_t>(std::int64_t{static_cast<std::int32_t>(live - pg->used_at_fold)});
  std::uint64_t mallocs, frees;
  if (page_has_map(pg)) {
    mallocs = pg->mallocs;
    frees = mallocs - net;
  } else {
    frees = pg->counts >> 32;
    mallocs = frees + net;
  }
  h->counters.mallocs[cls].add(mallocs);
  h->counters.frees[cls].add(frees);
  pg->mallocs = 0;
  pg->counts = page_used(pg);
  pg->used_at_fold = live;
}

void heap_fold_stats(heap* h) {
  for (page_queue& q : h->queues)
    for (page* pg = q.first; pg != nullptr; pg = pg->next) page_fold_stats(h, pg);
  for (page* pg = h->full.first; pg != nullptr; pg = pg->next) page_fold_stats(h, pg);
}

namespace {
// Let `pg`, requeued second with a hot block, serve at once when the map page
// malloc takes from has no block left: the refill the next malloc would make
// does just this, at about 500 instructions. In a working set of random sizes
// one malloc in ten met such a refill, each after a free into a full map page.
void page_serve_next(heap* h, page* pg) {
  std::size_t cls = pg->size_class;
  page* first = h->queues[cls].first;
  if (first == pg || pg->free == nullptr || single_block_class(cls)) return;
  if ((first->owner.load(std::memory_order_relaxed) & page_flag_mask) != page_is_map ||
      first->free != nullptr || first->free_map != 0 || h->current[cls] != first)
    return;
  if (page_to_full(h, first)) heap_set_current(h, cls);  // pg is first now
}
}  // namespace

void page_unfull(heap* h, page* pg) {
  pg->thread_free.fetch_and(~thread_free_full, std::memory_order_relaxed);
  pg->owner.store(pg->owner.load(std::memory_order_relaxed) & ~page_in_full,
                  std::memory_order_relaxed);
  queue_remove(h->full, pg);
  page_queue& q = h->queues[pg->size_class];
  bool was_empty = q.first == nullptr;
  // Next after the page malloc takes from: the blocks just freed into it are
  // the likeliest still in cache, so they serve before older pages'.
  queue_push_second(q, pg);
  if (was_empty) heap_set_current(h, pg->size_class);
  page_settle(h, pg);
  page_serve_next(h, pg);
}

void page_emptied(heap* h, page* pg) {
  thread_context* ctx = h->context;
  long delay = options::get(STRATA_OPTION_PURGE_DELAY_MS);
  bool single = pg->size_class < class_count && single_block_class(pg->size_class);
  // Keep the page the fast path allocates from (a malloc/free loop with one
  // live block empties it on every free), or that would become it. A one-block
  // class keeps one only once it was asked for again after giving a page back
  // (a hash table that grows through the classes leaves none of its old
  // pages), only until the next purge unless it takes it back, and only if
  // the page is among the thread's lowest kept ones (keep_single_page).
  bool in_full = (pg->owner.load(std::memory_order_relaxed) & page_in_full) != 0;
  if (pg->size_class < class_count) {
    page_queue& q = h->queues[pg->size_class];
    bool keep = q.first == pg || (q.first == nullptr && in_full);
    if (single && keep && (h->single_recurring & single_class_bit(pg->size_class)) == 0) {
      keep = false;
      h->single_released |= single_class_bit(pg->size_class);
    } else if (single && keep && keep_single_page(ctx, pg)) {
      ctx->keeps_single_pages = true;
      if (delay > 0 && ctx->next_purge == 0) ctx->next_purge = clock_ms() + delay;
    } else if (single) {
      keep = false;
    }
    if (keep && q.first == pg) return;
    if (keep) return page_unfull(h, pg);
  }
  segment* seg = segment_of(pg);
  // One-block pages are not retained: each class keeps one already (above),
  // and the rest serve best as free slices, for a page of any length.
  if (!seg->huge && !single && delay != 0 && retain_page(ctx, pg)) {
    if (in_full) page_unfull(h, pg);
    // A deadline already set is earlier than one set now: no need to read the clock.
    if (delay > 0 && ctx->next_purge == 0) ctx->next_purge = clock_ms() + delay;
  } else {
    bool may_release = !seg->huge && delay != 0;  // with no delay page_free released it already
    page_free(h, pg);
    // An empty segment waits in the shared cache, where the purge thread
    // gives it back after the delay even if this thread stops allocating.
    if (may_release) thread_release_if_empty(ctx, seg);
  }
  purger_start_if_needed();  // retaining may have released older pages' segments
}

void thread_free_retained_pages(thread_context* ctx) {
  for (heap* h = &ctx->main_heap; h != nullptr; h = h->next_in_thread) {
    for (std::size_t cls = 0; cls < class_count; ++cls) {
      bool single = single_block_class(cls);
      for (page* pg = h->queues[cls].first; pg != nullptr;) {
        page* next = pg->next;
        if (page_live(pg) == 0 && (h->current[cls] != pg || single)) page_free(h, pg);
        pg = next;
      }
    }
  }
  retained_clear(ctx);  // what is left of it is serving again
  ctx->keeps_single_pages = false;
}

bool thread_free_empty_current_pages(thread_context* ctx, std::size_t max_slices,
                                     bool single_block) {
  bool freed = false;
  for (heap* h = &ctx->main_heap; h != nullptr; h = h->next_in_thread) {
    for (std::size_t cls = 0; cls < class_count; ++cls) {
      if (single_block_class(cls) != single_block) continue;
      page* pg = h->queues[cls].first;  // the current page (in secure mode no slot points at it)
      if (pg != nullptr && pg->retained_slot == 0 && page_live(pg) == 0 &&
          pg->slice_count <= max_slices) {
        page_free(h, pg);
        freed = true;
      }
    }
  }
  return freed;
}

void page_free(heap* h, page* pg) {
  segment* seg = segment_of(pg);
  page_fold_stats(h, pg);
  if (seg->huge) {
    queue_remove(h->full, pg);
    huge_segment_release(seg);
    return;
  }
  retained_forget(h->context, pg);
  std::size_t cls = pg->size_class;
  if (pg->owner.load(std::memory_order_relaxed) & page_in_full) {
    queue_remove(h->full, pg);
  } else {
    queue_remove(h->queues[cls], pg);
    if (h->current[cls] == pg) heap_set_current(h, cls);
  }
  pg->owner.store(0, std::memory_order_relaxed);
  segment_free_slices(seg, pg->slice_index, pg->slice_count);

  // The slices keep their memory until the purge delay has passed since the
  // segment's last free: a heap that frees and reallocates in waves reuses them.
  // Not a small heap's one-block page: only another one-block page would reuse
  // its memory, which a small program seldom asks for again (python3 -c pass
  // held a 78 KB buffer it had freed to its exit, 80 KiB of its peak RSS),
  // and a class that does ask again keeps its next page (keep_single_page).
  // (The segment stays the thread's: a caller may be walking its segments.)
  thread_context* ctx = h->context;
  long delay = options::get(STRATA_OPTION_PURGE_DELAY_MS);
  if (delay == 0) {
    thread_purge_segment(ctx, seg);
  } else if (delay > 0 && seg->single_block_pages && heap_is_small()) {
    segment_purge(seg);
  } else if (delay > 0) {
    seg->purge_deadline = clock_ms() + delay;
    if (ctx->next_purge == 0 || seg->purge_deadline < ctx->next_purge)
      ctx->next_purge = seg->purge_deadline;
  }
}

void heap_requeue_remote_full(heap* h) {
  if (!h->full_pages_have_remote.load(std::memory_order_relaxed)) return;
  h->full_pages_have_remote.store(false, std::memory_order_relaxed);
  for (page* pg = h->full.first; pg != nullptr;) {
    page* next = pg->next;
    if (thread_free_blocks(pg->thread_free.load(std::memory_order_relaxed)) != nullptr) {
      page_collect(pg);
      if (page_live(pg) == 0)
        page_free(h, pg);
      else if (!segment_of(pg)->huge)
        page_unfull(h, pg);
    }
    pg = next;
  }
}

void thread_deferred_work(heap* h) {
  thread_context* ctx = h->context;
  if (ctx->remote_pending_count != 0) remote_flush_all(ctx);
  heap_requeue_remote_full(h);
  if (ctx->next_purge != 0 && clock_ms() >= ctx->next_purge) thread_purge_due(ctx, false);
  if (!purger_running()) {  // else the purge thread keeps these deadlines
    segment_cache_collect(false);
    abandoned_collect(false);
  }
}

}  // namespace strata::heap
