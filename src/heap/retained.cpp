// Retained pages: emptied pages a thread keeps in their queues, so that a batch
// freed and allocated again reuses its blocks as they are. At most
// retained_limit bytes are kept. Past that the oldest go back to their
// segments first: a program's earlier phase leaves pages its next phase does
// not use. The rest go after the purge delay, in collect, or at thread exit.
//
// One-block pages are kept apart, one per class as its page, and at most
// eight of them, the lowest: a loop over up to eight large sizes stays on its
// pages, while a program that frees large blocks of more sizes gives the
// rest back as free slices, so that the next round's pages, claimed lowest
// first in the oldest segments, land where the last round's did
// (xsigma/mixed-stress faulted 80 pages a round in again when each of sixteen
// classes kept a page wherever its last block had been; with the two lowest
// kept, a loop over three sizes took a slow path each time).
#include <utility>

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

// Give an emptied page of `ctx` back to its segment, and the segment back if that emptied it.
void give_back(thread_context* ctx, page* pg) {
  segment* seg = segment_of(pg);
  page_free(pg->owner_heap.load(std::memory_order_relaxed), pg);
  thread_release_if_empty(ctx, seg);
}

// Give the oldest retained page back to its segment, unless malloc took it up
// again without passing through the refill path (it became a queue's head).
void release_oldest(thread_context* ctx) {
  page* pg = pop_oldest(ctx->retained);
  if (pg == nullptr) return;
  heap* h = pg->owner_heap.load(std::memory_order_relaxed);
  if (page_live(pg) != 0 || h->queues[pg->size_class].first == pg) return;
  give_back(ctx, pg);
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

// Where a one-block page lies, the oldest segment's lowest slice first: the
// order in which such pages are claimed.
std::pair<std::uint64_t, std::uint32_t> single_page_place(const page* pg) {
  return {segment_of(pg)->serial, pg->slice_index};
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

bool keep_single_page(thread_context* ctx, page* pg) {
  for (page* kept : ctx->kept_single)
    if (kept == pg) return true;
  page** highest = nullptr;
  for (page*& kept : ctx->kept_single) {
    // A page that is no longer its class's page (a refill sent it to the
    // full list, say) holds its slot no more.
    if (kept != nullptr &&
        kept->owner_heap.load(std::memory_order_relaxed)->queues[kept->size_class].first != kept)
      kept = nullptr;
    if (kept == nullptr) {
      kept = pg;
      return true;
    }
    if (highest == nullptr || single_page_place(kept) > single_page_place(*highest))
      highest = &kept;
  }
  // The highest of the kept pages makes room for a lower one if it holds no
  // block (its slices go back); otherwise this one goes back.
  page* older = *highest;
  if (single_page_place(pg) > single_page_place(older) || page_live(older) != 0) return false;
  *highest = pg;
  give_back(ctx, older);
  return true;
}

void retained_clear(thread_context* ctx) {
  while (ctx->retained.count != 0) pop_oldest(ctx->retained);
}

void retained_forget(thread_context* ctx, page* pg) {
  for (page*& kept : ctx->kept_single)
    if (kept == pg) kept = nullptr;
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
