// Free slow paths: the last block of a page, flagged pages, huge blocks, and
// frees from other threads, which are batched per destination page and posted
// with one compare-exchange per batch.
#include <unistd.h>
#include <cstdio>
#include <cstdlib>

#include "heap/heap_internal.hpp"

namespace strata::heap {

namespace {

void report_foreign(void* p) noexcept {
  heap_corruption("free of a pointer strata did not allocate", p);
}
foreign_free_handler foreign_handler = report_foreign;

// Post the list head..tail to the page's thread_free; wake its heap if full.
void post_blocks(page* pg, block* head, block* tail) {
  heap* owner =
      pg->owner_heap.load(std::memory_order_relaxed);  // read while our block keeps it alive
  std::uintptr_t word = pg->thread_free.load(std::memory_order_relaxed);
  do {
    tail->next = thread_free_blocks(word);
  } while (!pg->thread_free.compare_exchange_weak(
      word, reinterpret_cast<std::uintptr_t>(head) | (word & thread_free_full),
      std::memory_order_release, std::memory_order_relaxed));
  if ((word & thread_free_full) != 0 && owner != nullptr)
    owner->full_pages_have_remote.store(true, std::memory_order_relaxed);
}

void flush(thread_context* ctx, remote_batch& batch) {
  post_blocks(batch.destination, batch.head, batch.tail);
  ctx->batched_frees -= batch.count;
  batch = remote_batch{};
}

std::size_t batch_slot(const page* pg) {
  auto x = reinterpret_cast<std::uintptr_t>(pg) / sizeof(page);
  return (x ^ (x >> 4) ^ (x >> 9)) % remote_batch_slots;
}

// Free a block of a page owned by another thread (or by none).
void remote_free(page* pg, block* b) {
  heap* me = default_heap();
  if (me == nullptr) {  // this thread cannot get a heap: post at once
    b->next = nullptr;
    post_blocks(pg, b, b);
    return;
  }
  me->counters.frees[pg->size_class].add(1);
  me->counters.cross_thread_frees.add(1);
  if (pg->size_class == class_count) {  // a huge block is worth giving back now
    post_blocks(pg, b, b);
    return;
  }
  thread_context* ctx = me->context;
  remote_batch& batch = ctx->batches[batch_slot(pg)];
  if (batch.destination != pg) {
    if (batch.count != 0) flush(ctx, batch);
    batch.destination = pg;
  }
  b->next = batch.head;
  batch.head = b;
  if (batch.tail == nullptr) batch.tail = b;
  batch.count++;
  ctx->batched_frees++;
  if (batch.count >= remote_batch_limit) flush(ctx, batch);
}

}  // namespace

void set_foreign_free_handler(foreign_free_handler handler) noexcept {
  foreign_handler = handler != nullptr ? handler : report_foreign;
}

void free_foreign(void* p) noexcept {
  if (p != nullptr) foreign_handler(p);
}

void free_slow(segment* seg, page* pg, void* p) noexcept {
  std::uintptr_t word = pg->owner.load(std::memory_order_relaxed);
  auto* b = (word & page_has_aligned) != 0 ? block_containing(pg, p) : static_cast<block*>(p);
  std::uintptr_t owner = word & ~page_flag_mask;
  if (owner == os::thread_id()) {
    heap* h = pg->owner_heap.load(std::memory_order_relaxed);
    if (page_live(pg) == 0) heap_corruption("double free", p);
    if (page_has_map(pg)) {
      page_give(pg, b);
    } else {
      b->next = pg->free;
      pg->free = b;
      pg->counts += owner_free_step;
    }
    // A normal page's stats fold counts this free.
    if (seg->huge) h->counters.frees[class_count].add(1);
    if (page_used(pg) == 0 && seg->huge) {
      page_free(h, pg);
      purger_start_if_needed();
      return;
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
  remote_free(pg, b);
}

void report_double_free(const void* p) noexcept {
  heap_corruption("double free", p);
}

void page_emptied_by_owner(page* pg) noexcept {
  if (page_used(pg) > pg->reserved || page_live(pg) > pg->reserved)
    heap_corruption("double free", pg->free);
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

void remote_flush_all(thread_context* ctx) {
  for (remote_batch& batch : ctx->batches)
    if (batch.count != 0) flush(ctx, batch);
}

void heap_corruption(const char* what, const void* p) {
  char line[160];
  int n = std::snprintf(line, sizeof(line), "strata: heap corruption: %s (pointer %p)\n", what, p);
  if (n > 0) {
    ssize_t ignored = ::write(STDERR_FILENO, line, static_cast<std::size_t>(n));
    (void)ignored;
  }
  std::abort();
}

}  // namespace strata::heap
