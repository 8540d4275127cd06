// Thread life cycle: setting a thread up on its first allocation, handing its
// segments over when it exits, and reclaiming those segments elsewhere.
#include <pthread.h>
#include <mutex>

#include "heap/heap_handle.hpp"
#include "heap/heap_internal.hpp"
#include "heap/metadata.hpp"
#include "heap/registry.hpp"
#include "heap/sampling.hpp"
#include "heap/slice_bitmap.hpp"
#include "options/options.hpp"
#include "os/mutex.hpp"

namespace strata::heap {

namespace {

pthread_key_t exit_key;
pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

// Segments of exited threads that still hold live blocks.
os::mutex abandoned_lock;
segment* abandoned = nullptr;
// Held while one thread collects the abandoned segments it took off the list
// (and across fork, so a child never finds segments missing from it).
os::mutex abandoned_collect_lock;
// When the abandoned segments are next due to be looked at (ms clock); 0 when never.
std::atomic<std::int64_t> abandoned_due{0};

void thread_done(void* arg);

void create_exit_key() {
  pthread_key_create(&exit_key, thread_done);
}

// Each page head of a normal segment, in slice order.
template <class Visit>
void for_each_page(segment* seg, Visit visit) {
  for (std::size_t i = header_slices;;) {
    i = slice_bitmap::next(seg->free_slices, slice_count, i, false);  // the next page's first slice
    if (i == slice_count) return;
    page* pg = &seg->pages[seg->slice_head[i]];
    if (pg->slice_count == 0) {  // in use but no page: secure mode's guard slice
      ++i;
      continue;
    }
    i = pg->slice_index + pg->slice_count;
    visit(pg);
  }
}

// Add `seg` to the segments `ctx` carves pages from, kept oldest first: pages
// then go where they went the last time the same blocks were asked for.
void link_segment(thread_context* ctx, segment* seg) {
  seg->owner = ctx;
  segment* prev = nullptr;
  segment* next = ctx->segments;
  while (next != nullptr && next->serial < seg->serial) {
    prev = next;
    next = next->next;
  }
  seg->prev = prev;
  seg->next = next;
  if (next != nullptr) next->prev = seg;
  (prev != nullptr ? prev->next : ctx->segments) = seg;
  ctx->segment_count++;
}

// Take over an exited thread's segment: its pages join `ctx`'s main heap.
// Returns false when all its pages were empty (the segment is purged later).
bool adopt_segment(thread_context* ctx, segment* seg) {
  heap* h = &ctx->main_heap;
  link_segment(ctx, seg);
  // Slices freed while it was abandoned keep their purge deadline, now this thread's.
  if (seg->purge_deadline != 0 && (ctx->next_purge == 0 || seg->purge_deadline < ctx->next_purge))
    ctx->next_purge = seg->purge_deadline;
  std::size_t live = 0;
  for_each_page(seg, [&](page* pg) {
    std::uintptr_t flags = pg->owner.load(std::memory_order_relaxed) & page_kind_flags;
    pg->owner_heap.store(h, std::memory_order_release);  // see post_blocks
    pg->owner.store(ctx->thread_id | flags, std::memory_order_relaxed);
    page_collect(pg);
    queue_push_back(h->queues[pg->size_class], pg);
    if (page_live(pg) == 0) {
      page_free(h, pg);
    } else {
      ++live;
      if (h->queues[pg->size_class].first == pg) heap_set_current(h, pg->size_class);
      page_settle(h, pg);
    }
  });
  return live != 0;
}

// Give up every page of `h`: empty ones go back to their segments, the rest
// lose their owner so that any thread's free of them becomes a remote free.
void abandon_pages(heap* h) {
  heap_fold_stats(h);
  auto release = [h](page_queue& q) {
    for (page* pg = q.first; pg != nullptr;) {
      page* next = pg->next;
      page_collect(pg);
      if (page_live(pg) == 0) {
        page_free(h, pg);
      } else {
        pg->thread_free.fetch_and(~thread_free_full, std::memory_order_relaxed);
        pg->owner_heap.store(nullptr, std::memory_order_relaxed);
        pg->owner.store(pg->owner.load(std::memory_order_relaxed) & page_kind_flags,
                        std::memory_order_release);
        // A free racing with the owner change posted a block: look once more.
        if (segment_of(pg)->huge && page_collect(pg) != 0 && page_used(pg) == 0)
          huge_segment_release(segment_of(pg));
      }
      pg = next;
    }
    q = page_queue{};
  };
  for (page_queue& q : h->queues) release(q);
  release(h->full);
  for (std::size_t cls = 0; cls < class_count; ++cls) heap_set_current(h, cls);
}

// Thread exit: flush, give pages up, cache empty segments, abandon the rest.
void thread_done(void* arg) {
  auto* ctx = static_cast<thread_context*>(arg);
  remote_flush_all(ctx);
  heap* h = ctx->main_heap.next_in_thread;
  while (h != nullptr) {  // first-class heaps the thread never deleted
    heap* next = h->next_in_thread;
    abandon_pages(h);
    registry_remove(h);
    heap_forget_handle(h);
    metadata_delete(h);
    h = next;
  }
  abandon_pages(&ctx->main_heap);
  bool any_abandoned = false;
  for (segment* seg = ctx->segments; seg != nullptr;) {
    segment* next = seg->next;
    if (segment_is_empty(seg)) {
      segment_release(seg);
    } else {
      // Its free slices keep their memory until their purge deadline, when the
      // abandoned segments are collected: the next thread, likely to adopt it,
      // reuses them without faults (short-lived threads purged and faulted
      // their pages in again at each exit).
      if (options::get(STRATA_OPTION_PURGE_DELAY_MS) == 0) segment_purge(seg);
      seg->owner = nullptr;
      std::lock_guard<os::mutex> guard(abandoned_lock);
      seg->next = abandoned;
      abandoned = seg;
      any_abandoned = true;
    }
    seg = next;
  }
  // A free that read this thread's heap as the owner may still post to its pages.
  if (any_abandoned) abandoned_note_free();
  registry_remove(&ctx->main_heap);
  heap_forget_handle(&ctx->main_heap);
  tls_entry.own_heap = &empty_heap;
  metadata_delete(ctx);
}

}  // namespace

heap* thread_heap_init() noexcept {
  pthread_once(&exit_key_once, create_exit_key);
  auto* ctx = metadata_new_uninitialised<thread_context>();
  if (ctx == nullptr) return nullptr;
  ctx->thread_id = os::thread_id();
  ctx->main_heap.context = ctx;
  heap_issue_handle(&ctx->main_heap);
  registry_add(&ctx->main_heap);
  pthread_setspecific(exit_key, ctx);
  tls_entry.own_heap = &ctx->main_heap;
  sampling_start();  // the first thread sets the samplers up; it can allocate now
  return &ctx->main_heap;
}

segment* thread_adopt_abandoned(thread_context* ctx) {
  for (;;) {
    segment* seg;
    {
      std::lock_guard<os::mutex> guard(abandoned_lock);
      seg = abandoned;
      if (seg != nullptr) abandoned = seg->next;
    }
    if (seg == nullptr) return nullptr;
    if (adopt_segment(ctx, seg)) return seg;  // otherwise it held nothing: try the next
  }
}

namespace {

// Move the abandoned segments' next look to `due` unless one is set earlier.
void abandoned_arm(std::int64_t due) {
  std::int64_t current = abandoned_due.load(std::memory_order_relaxed);
  do {
    if (current != 0 && current <= due) return;
  } while (!abandoned_due.compare_exchange_weak(current, due, std::memory_order_relaxed));
  purger_wake();
}

// Collect the blocks freed into an abandoned segment and give its emptied pages
// back; purge its free slices once their delay has passed (now, with `force`).
// Returns the segment's next purge deadline, 0 when none is pending.
std::int64_t collect_abandoned_segment(segment* seg, std::int64_t now, bool force) {
  bool freed = false;
  for_each_page(seg, [&](page* pg) {
    page_collect(pg);
    if (page_live(pg) != 0) return;
    // Nobody owns the page and no block of it is out: no thread can reach it.
    pg->owner.store(0, std::memory_order_relaxed);
    segment_free_slices(seg, pg->slice_index, pg->slice_count);
    freed = true;
  });
  long delay = options::get(STRATA_OPTION_PURGE_DELAY_MS);
  if (freed && delay > 0) seg->purge_deadline = now + delay;
  if (force || (freed && delay == 0) || (seg->purge_deadline != 0 && seg->purge_deadline <= now))
    segment_purge(seg);
  return seg->purge_deadline;
}

}  // namespace

void abandoned_note_free() noexcept {
  if (abandoned_due.load(std::memory_order_relaxed) != 0) return;
  long delay = options::get(STRATA_OPTION_PURGE_DELAY_MS);
  if (delay >= 0) abandoned_arm(clock_ms() + delay);
}

std::int64_t abandoned_deadline() noexcept {
  return abandoned_due.load(std::memory_order_relaxed);
}

namespace {
// abandoned_collect once it is due. Out of line, so that abandoned_collect,
// asked on every refill, returns with nothing due before saving any register.
__attribute__((noinline)) void abandoned_collect_due(bool force) {
  if (force)
    abandoned_collect_lock.lock();
  else if (!abandoned_collect_lock.try_lock())
    return;  // another thread is at it
  std::lock_guard<os::mutex> collecting(abandoned_collect_lock, std::adopt_lock);
  // Frees from here on arm the next look themselves.
  abandoned_due.store(0, std::memory_order_relaxed);
  valgrind_quiet quiet;  // collecting reads the links of freed blocks
  segment* list;
  {
    std::lock_guard<os::mutex> guard(abandoned_lock);
    list = abandoned;
    abandoned = nullptr;
  }
  // Off the list, the segments are this thread's alone: adopters see none of them.
  std::int64_t now = clock_ms();
  std::int64_t next_due = 0;
  segment* kept = nullptr;
  segment* kept_last = nullptr;
  while (list != nullptr) {
    segment* seg = list;
    list = seg->next;
    std::int64_t deadline = collect_abandoned_segment(seg, now, force);
    if (segment_is_empty(seg)) {
      segment_release(seg);  // the cache purges it after its delay
      continue;
    }
    if (deadline != 0 && (next_due == 0 || deadline < next_due)) next_due = deadline;
    seg->next = kept;
    kept = seg;
    if (kept_last == nullptr) kept_last = seg;
  }
  if (kept != nullptr) {
    std::lock_guard<os::mutex> guard(abandoned_lock);
    kept_last->next = abandoned;
    abandoned = kept;
  }
  if (next_due != 0) abandoned_arm(next_due);
}
}  // namespace

void abandoned_collect(bool force) noexcept {
  std::int64_t due = abandoned_due.load(std::memory_order_relaxed);
  if (!force && (due == 0 || clock_ms() < due)) return;
  abandoned_collect_due(force);
}

segment* thread_acquire_segment(thread_context* ctx, bool single_block_pages) {
  // Prefer a segment of an exited thread with room; its pages join this thread.
  while (segment* adopted = thread_adopt_abandoned(ctx)) {
    if (adopted->pages_in_use < slice_count / 2) return adopted;
  }
  segment* seg = segment_acquire(ctx, cached_segment::any, single_block_pages);
  if (seg == nullptr) return nullptr;
  link_segment(ctx, seg);
  return seg;
}

segment* thread_acquire_dirty_segment(thread_context* ctx, bool single_block_pages, bool any_kind) {
  segment* seg = segment_acquire(
      ctx, any_kind ? cached_segment::dirty_any_kind : cached_segment::dirty_own_kind,
      single_block_pages);
  if (seg != nullptr) link_segment(ctx, seg);
  return seg;
}

bool thread_convert_empty_segment(thread_context* ctx, bool single_block_pages) {
  for (segment* seg = ctx->segments; seg != nullptr; seg = seg->next) {
    if (seg->single_block_pages != single_block_pages && segment_is_empty(seg)) {
      seg->single_block_pages = single_block_pages;
      return true;
    }
  }
  return false;
}

void thread_purge_segment(thread_context* ctx, segment* seg) {
  segment_purge(seg);
  thread_release_if_empty(ctx, seg);
}

void thread_release_if_empty(thread_context* ctx, segment* seg) {
  if (!segment_is_empty(seg) || ctx->segment_count <= 1) return;
  if (seg->prev != nullptr)
    seg->prev->next = seg->next;
  else
    ctx->segments = seg->next;
  if (seg->next != nullptr) seg->next->prev = seg->prev;
  ctx->segment_count--;
  segment_release(seg);
}

void thread_purge_due(thread_context* ctx, bool force) {
  if (ctx->retained.count != 0 || ctx->keeps_single_pages) thread_free_retained_pages(ctx);
  std::int64_t now = clock_ms();
  std::int64_t earliest = 0;
  for (segment* seg = ctx->segments; seg != nullptr;) {
    segment* next = seg->next;
    if (force || (seg->purge_deadline != 0 && seg->purge_deadline <= now))
      thread_purge_segment(ctx, seg);
    else if (seg->purge_deadline != 0 && (earliest == 0 || seg->purge_deadline < earliest))
      earliest = seg->purge_deadline;
    seg = next;
  }
  ctx->next_purge = earliest;
}

heap* heap_new() noexcept {
  heap* owner = default_heap();
  if (owner == nullptr) return nullptr;
  heap* h = metadata_new<heap>();
  if (h == nullptr) return nullptr;
  h->context = owner->context;
  h->next_in_thread = owner->context->main_heap.next_in_thread;
  owner->context->main_heap.next_in_thread = h;
  heap_issue_handle(h);
  registry_add(h);
  return h;
}

namespace {
// Unlink a first-class heap from its thread's list.
void unlink_from_thread(heap* h) {
  for (heap* prev = &h->context->main_heap; prev != nullptr; prev = prev->next_in_thread) {
    if (prev->next_in_thread == h) {
      prev->next_in_thread = h->next_in_thread;
      return;
    }
  }
}
}  // namespace

void heap_destroy(heap* h) noexcept {
  if (h == nullptr || h == &h->context->main_heap) return;
  remote_flush_all(h->context);
  auto drop = [h](page_queue& q) {
    while (page* pg = q.first) {
      page_collect(pg);
      page_fold_stats(h, pg);
      h->counters.frees[pg->size_class].add(page_live(pg));  // every live block is freed here
      pg->counts = pg->used_at_fold = 0;
      pg->free = nullptr;  // a map page's hot block too
      page_free(h, pg);
    }
  };
  for (page_queue& q : h->queues) drop(q);
  drop(h->full);
  unlink_from_thread(h);
  registry_remove(h);
  heap_forget_handle(h);
  metadata_delete(h);
}

void heap_delete(heap* h) noexcept {
  if (h == nullptr || h == &h->context->main_heap) return;
  heap* target = &h->context->main_heap;
  heap_fold_stats(h);  // counts so far stay with h, which the registry retires
  auto move = [target](page_queue& from, bool full) {
    while (page* pg = from.first) {
      queue_remove(from, pg);
      pg->owner_heap.store(target, std::memory_order_relaxed);
      queue_push_back(full ? target->full : target->queues[pg->size_class], pg);
    }
  };
  for (page_queue& q : h->queues) move(q, false);
  move(h->full, true);
  for (std::size_t cls = 0; cls < class_count; ++cls) {
    heap_set_current(target, cls);
    for (page* pg = target->queues[cls].first; pg != nullptr;) {
      page* next = pg->next;  // settling may move it to the full list
      page_settle(target, pg);
      pg = next;
    }
  }
  // Frees into moved full pages may have signalled the old heap: look anyway.
  target->full_pages_have_remote.store(true, std::memory_order_relaxed);
  unlink_from_thread(h);
  registry_remove(h);
  heap_forget_handle(h);
  metadata_delete(h);
}

void heap_visit(heap* h, bool (*visit)(void*, std::size_t, void*), void* arg) noexcept {
  // Mark free blocks in a bitmap, then report the carved blocks left unmarked.
  constexpr std::size_t max_blocks = slice_size / min_block_size;
  auto visit_page = [&](page* pg) {
    page_collect(pg);
    std::uint64_t free_map[max_blocks / 64] = {};
    if (segment_of(pg)->huge) return visit(pg->area, pg->block_size, arg);
    block* list = pg->free;
    if (page_has_map(pg)) {  // the bits, plus the hot block (its next is not a link)
      free_map[0] = pg->free_map | (list != nullptr ? map_bit(pg, list) : 0);
      list = nullptr;
    }
    struct marker {
      const page* pg;
      std::uint64_t* bits;
    } mark{pg, free_map};
    auto mark_free = [](const block* b, void* arg) {
      auto* m = static_cast<marker*>(arg);
      std::size_t i =
          static_cast<std::size_t>(reinterpret_cast<const std::uint8_t*>(b) - m->pg->area) /
          m->pg->block_size;
      m->bits[i / 64] |= std::uint64_t{1} << (i % 64);
    };
    if ((pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0 && !page_has_map(pg))
      checked_for_each_free(pg, mark_free, &mark);
    else
      for (block* b = list; b != nullptr; b = b->next) mark_free(b, &mark);
    for (std::size_t i = 0; i < pg->capacity; ++i)
      if (((free_map[i / 64] >> (i % 64)) & 1) == 0 &&
          !visit(pg->area + i * pg->block_size, pg->block_size, arg))
        return false;
    return true;
  };
  for (page_queue& q : h->queues)
    for (page* pg = q.first; pg != nullptr; pg = pg->next)
      if (!visit_page(pg)) return;
  for (page* pg = h->full.first; pg != nullptr; pg = pg->next)
    if (!visit_page(pg)) return;
}

void collect(bool force) noexcept {
  heap* h = tls_entry.own_heap;
  if (h != &empty_heap) {
    thread_context* ctx = h->context;
    remote_flush_all(ctx);
    for (heap* each = &ctx->main_heap; each != nullptr; each = each->next_in_thread) {
      heap_requeue_remote_full(each);
      for (std::size_t cls = 0; cls < class_count; ++cls) {  // drop kept empty pages
        for (page* pg = each->queues[cls].first; pg != nullptr;) {
          page* next = pg->next;
          page_collect(pg);
          if (page_live(pg) == 0) page_free(each, pg);
          pg = next;
        }
      }
    }
    thread_purge_due(ctx, force);
  }
  abandoned_collect(force);  // first: the segments it empties go to the cache
  segment_cache_collect(force);
  if (force) segment_purge_everywhere();  // other threads' free slices
}

void fork_prepare() noexcept {
  registry_lock();
  abandoned_collect_lock.lock();
  abandoned_lock.lock();
  segment_cache_lock();
  metadata_lock();
}

void fork_parent() noexcept {
  metadata_unlock();
  segment_cache_unlock();
  abandoned_lock.unlock();
  abandoned_collect_lock.unlock();
  registry_unlock();
}

void fork_child() noexcept {
  // The child has one thread; the locks were held by this thread at fork time.
  fork_parent();
  purger_forget();
}

void register_fork_handlers() noexcept {
  // Once per process: a forked child inherits both the handlers and this flag.
  static std::atomic<bool> registered{false};
  if (!registered.exchange(true)) pthread_atfork(fork_prepare, fork_parent, fork_child);
}

}  // namespace strata::heap
