// Retained pages: emptied pages a thread keeps in their queues, so that a batch
// freed and allocated again reuses its blocks as they are. At most
// retained_limit bytes are kept. Past that the oldest go back to their
// segments first: a program's earlier phase leaves pages its next phase does
// not use. The rest go after the purge delay, in collect, or at thread exit.
#include "heap/heap_internal.hpp"

namespace strata::heap {

namespace {

constexpr std::size_t retained_limit = std::size_t{2} << 20;

std::size_t page_bytes(const page* pg) {
  return std::size_t{pg->slice_count} * slice_size;
}

// Take the oldest entry off the ring; null when that page was taken back.
page* pop_oldest(retained_ring& ring) {
  page* pg = ring.pages[ring.oldest];
  ring.pages[ring.oldest] = nullptr;
  ring.oldest = (ring.oldest + 1) % retained_slots;
  ring.count--;
  if (pg != nullptr) {
    pg->retained_slot = 0;
    ring.bytes -= page_bytes(pg);
  }
  return pg;
}

// Give the oldest retained page back to its segment, unless malloc took it up
// again without passing through the refill path (it became a queue's head).
void release_oldest(thread_context* ctx) {
  page* pg = pop_oldest(ctx->retained);
  if (pg == nullptr) return;
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  if (page_live(pg) != 0 || h->queues[pg->size_class].first == pg) return;
  segment* seg = segment_of(pg);
  page_free(h, pg);
  thread_release_if_empty(ctx, seg);
}

// Close the gaps that pages taken back left, keeping the order: a page
// retained again leaves a null behind, and a full ring of such nulls must not
// push out the pages still waiting (a phase that empties the same few pages
// over and over would otherwise evict another class's pages every time).
void close_gaps(retained_ring& ring) {
  std::uint32_t kept = 0;
  for (std::uint32_t i = 0; i < ring.count; ++i) {
    page* pg = ring.pages[(ring.oldest + i) % retained_slots];
    if (pg == nullptr) continue;
    std::uint32_t slot = (ring.oldest + kept++) % retained_slots;
    ring.pages[slot] = pg;
    pg->retained_slot = slot + 1;
  }
  for (std::uint32_t i = kept; i < ring.count; ++i)
    ring.pages[(ring.oldest + i) % retained_slots] = nullptr;
  ring.count = kept;
}

}  // namespace

bool retain_page(thread_context* ctx, page* pg) {
  std::size_t bytes = page_bytes(pg);
  if (bytes > retained_limit) return false;
  retained_forget(ctx, pg);
  retained_ring& ring = ctx->retained;
  if (ring.count == retained_slots) close_gaps(ring);
  while (ring.count == retained_slots || ring.bytes + bytes > retained_limit) release_oldest(ctx);
  std::uint32_t slot = (ring.oldest + ring.count) % retained_slots;
  ring.pages[slot] = pg;
  ring.count++;
  ring.bytes += bytes;
  pg->retained_slot = slot + 1;
  return true;
}

void retained_clear(thread_context* ctx) {
  while (ctx->retained.count != 0) pop_oldest(ctx->retained);
}

void retained_forget(thread_context* ctx, page* pg) {
  // The slot is checked: a page that served again without being forgotten
  // (and perhaps changed thread since) may name a slot that is not its own.
  if (pg->retained_slot == 0) return;
  page*& slot = ctx->retained.pages[pg->retained_slot - 1];
  if (slot == pg) {
    slot = nullptr;
    ctx->retained.bytes -= page_bytes(pg);
  }
  pg->retained_slot = 0;
}

}  // namespace strata::heap
