// Checked pages: secure mode (STRATA_SECURE). A checked page carries the
// page_is_checked flag, so every free of it leaves the inline fast path, and
// secure mode points no heap slot at a page, so every malloc reaches the slow
// path too; both come here. In exchange:
//   - free-list links are encoded with a key per page and checked when used:
//     a link overwritten by an overflow from the block before is caught, not followed;
//   - blocks are carved in random order, and map pages hand out a random free block;
//   - a freed block waits on the page's delayed list and is handed out only
//     once the page has no other block, never at the next malloc.
#include <sys/random.h>
#include <atomic>
#include <bit>

#include "heap/heap_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

namespace {

// The process's secret, drawn once from the kernel; every page key derives from it.
std::uintptr_t process_secret() {
  static std::atomic<std::uintptr_t> secret{0};
  std::uintptr_t value = secret.load(std::memory_order_relaxed);
  if (value != 0) return value;
  std::uintptr_t drawn = 0;
  if (::getrandom(&drawn, sizeof(drawn), 0) != sizeof(drawn))
    drawn = reinterpret_cast<std::uintptr_t>(&secret) ^ static_cast<std::uintptr_t>(clock_ms());
  drawn |= 1;  // never 0, which means "not drawn yet"
  std::uintptr_t expected = 0;
  return secret.compare_exchange_strong(expected, drawn, std::memory_order_relaxed) ? drawn
                                                                                    : expected;
}

// A 64-bit mix (the finaliser of splitmix64): nearby inputs give unrelated outputs.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

// The key of a page: distinct per page and per process, unknown to the program.
std::uintptr_t page_key(const page* pg) {
  return mix(reinterpret_cast<std::uintptr_t>(pg) ^ process_secret());
}

// A link as stored in block `at`: keyed and tied to where it is stored, so a
// copied or forged link does not decode to a block of the page.
std::uintptr_t encode_link(const page* pg, const block* at, const block* next) {
  return reinterpret_cast<std::uintptr_t>(next) ^ page_key(pg) ^
         reinterpret_cast<std::uintptr_t>(at);
}

// Random numbers for carving order and block choice, one generator per thread.
std::uint64_t next_random() {
  static thread_local std::uint64_t state = 0;
  if (state == 0) state = mix(process_secret() ^ os::thread_id()) | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// The block the link stored in `at` leads to; a link that does not decode to
// null or a carved block start of the page is reported as corruption.
block* decode_link(const page* pg, const block* at) {
  auto* next = reinterpret_cast<block*>(reinterpret_cast<std::uintptr_t>(at->next) ^ page_key(pg) ^
                                        reinterpret_cast<std::uintptr_t>(at));
  if (next == nullptr) return nullptr;
  auto offset = static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(next) - pg->area);
  if (offset >= std::size_t{pg->capacity} * pg->block_size || offset % pg->block_size != 0)
    heap_corruption_at("free list link overwritten (an overflow from the block before?)", pg, at);
  return next;
}

// Push `b` onto a checked list whose head is `head`.
void push_encoded(page* pg, block*& head, block* b) {
  b->next = reinterpret_cast<block*>(encode_link(pg, b, head));
  b->free_tag = checked_free_tag(pg, b);
  head = b;
}

// Carve the next blocks of a checked list page in random order.
void extend_shuffled(page* pg) {
  std::uint32_t n = pg->reserved - pg->capacity;
  std::size_t most = 16384 / pg->block_size;
  if (n > most) n = static_cast<std::uint32_t>(most);
  std::uint16_t order[16384 / min_block_size];
  for (std::uint32_t i = 0; i < n; ++i) order[i] = static_cast<std::uint16_t>(i);
  // Debug mode alone keeps the order: a block's place then does not vary from run to run.
  for (std::uint32_t i = secure_mode() ? n : 0; i > 1; --i) {  // Fisher-Yates
    auto j = static_cast<std::uint32_t>(next_random() % i);
    std::uint16_t t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  std::uint8_t* first = pg->area + std::size_t{pg->capacity} * pg->block_size;
  page_capacity_grow(pg, n);
  bool fill = debug_mode();
  for (std::uint32_t i = 0; i < n; ++i) {
    auto* b = reinterpret_cast<block*>(first + order[i] * pg->block_size);
    if (fill) debug_fill_free(pg, b);
    push_encoded(pg, pg->free, b);
  }
}

}  // namespace

std::uintptr_t checked_free_tag(const page* pg, const block* b) {
  return ~(page_key(pg) ^ reinterpret_cast<std::uintptr_t>(b));
}

std::uintptr_t page_free_tag(const page* pg, const block* b) {
  // A map page's differs from a list page's: its blocks are not written when
  // carved, and may hold a list tag from the same slices' earlier page.
  bool checked = (pg->owner.load(std::memory_order_relaxed) & page_is_checked) != 0;
  if (checked) return checked_free_tag(pg, b) ^ (page_has_map(pg) ? 1 : 0);
  return page_has_map(pg) ? remote_map_tag_of(pg) : free_tag_of(pg);
}

bool checked_has_block(page* pg) {
  if (page_has_map(pg)) return pg->free_map != 0;
  if (pg->free == nullptr) {
    // New blocks first: a freed one waits as long as the page has others.
    if (pg->capacity < pg->reserved) {
      extend_shuffled(pg);
    } else {
      pg->free = pg->delayed_free;
      pg->delayed_free = nullptr;
    }
  }
  return pg->free != nullptr;
}

void* checked_take(page* pg) {
  if (!checked_has_block(pg)) return nullptr;
  if (page_has_map(pg)) {  // a random one of the free blocks in secure mode, else the lowest
    std::uint64_t map = pg->free_map;
    auto choices = static_cast<unsigned>(std::popcount(map));
    for (auto skip = secure_mode() ? next_random() % choices : 0; skip != 0; --skip) map &= map - 1;
    std::uint64_t bit = map & (~map + 1);
    pg->free_map &= ~bit;
    pg->counts++;
    pg->mallocs++;
    return pg->area + static_cast<std::size_t>(std::countr_zero(bit)) * pg->block_size;
  }
  block* b = pg->free;
  if (b->free_tag != checked_free_tag(pg, b))
    heap_corruption_at("free block overwritten (use after free?)", pg, b);
  pg->free = decode_link(pg, b);
  b->next = nullptr;
  b->free_tag = 0;
  pg->counts++;
  return b;
}

void checked_free_owned(page* pg, block* b) {
  if (page_has_map(pg)) {
    pg->free_map |= map_bit(pg, b);
    pg->counts--;
    return;
  }
  push_encoded(pg, pg->delayed_free, b);
  pg->counts += owner_free_step;
}

void checked_collect(page* pg, block* list) {
  while (list != nullptr) {
    block* next = list->next;  // a raw link: other threads post blocks unencoded
    push_encoded(pg, pg->delayed_free, list);
    list = next;
  }
}

void checked_for_each_free(const page* pg, void (*each)(const block* b, void* arg), void* arg) {
  for (const block* head : {pg->free, pg->delayed_free})
    for (const block* b = head; b != nullptr; b = decode_link(pg, b)) each(b, arg);
}

void* checked_malloc(heap* h, std::size_t size) noexcept {
  valgrind_quiet quiet;
  bool debug = debug_mode();
  std::size_t need = debug ? size + debug_record_bytes : size;  // room for the size record
  if (need > medium_max) return malloc_huge(h, size, 0);
  std::size_t cls = size_class_of(need);
  note_class_asked(h, cls);
  page* pg = h->queues[cls].first;
  void* b = nullptr;
  // The queue's head while it serves; an emptied (retained) page goes through find_page.
  if (pg != nullptr && page_live(pg) != 0 && checked_has_block(pg)) {
    b = checked_take(pg);
  } else {
    pg = find_page(h, cls);
    if (pg == nullptr) return allocation_error(ENOMEM, "malloc", size, 0);
    // The block first: deferred work frees emptied pages, and this one may be
    // empty until it hands the block out (no heap slot points at it to keep it).
    b = checked_take(pg);
    one_block_page_taken(h, pg, cls);  // as malloc's refill does
    thread_deferred_work(h);
  }
  if (debug) debug_block_taken(pg, b, size);
  return b;
}

}  // namespace strata::heap
