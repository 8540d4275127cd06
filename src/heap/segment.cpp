// Segment life cycle: mapping, slice bookkeeping, purging, and the caches of
// empty segments and huge blocks that spare repeated mmap/munmap.
#include "heap/segment.hpp"

#include <sys/sysinfo.h>
#include <bit>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "heap/heap_internal.hpp"
#include "heap/huge_page_advice.hpp"
#include "heap/size_class.hpp"
#include "heap/slice_bitmap.hpp"
#include "heap/stats_internal.hpp"
#include "options/options.hpp"
#include "os/mutex.hpp"
#include "os/os.hpp"

namespace strata::heap {

namespace segment_map {
std::atomic<std::uint8_t> present[units];

// Mark (or clear) the first segment-sized unit of a segment: only pointers
// there can reach its header by masking.
static void set(const segment* s, bool is_present) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(s) >> segment_shift;
  if (index < units) present[index].store(is_present ? 1 : 0, std::memory_order_relaxed);
}
void add(const segment* s) {
  set(s, true);
}
void remove(const segment* s) {
  set(s, false);
}
void add_far_block(const segment* s, const void* area) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(area) >> segment_shift;
  std::uintptr_t distance = index - (reinterpret_cast<std::uintptr_t>(s) >> segment_shift);
  if (index < units) present[index].store(static_cast<std::uint8_t>(1 + distance));
}
void remove_far_block(const void* area) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(area) >> segment_shift;
  if (index < units) present[index].store(0, std::memory_order_relaxed);
}
segment* lookup(const void* p) {
  std::uintptr_t index = reinterpret_cast<std::uintptr_t>(p) >> segment_shift;
  if (index >= units) return nullptr;
  std::uint8_t mark = present[index].load(std::memory_order_relaxed);
  if (mark == 0) return nullptr;
  auto* seg = reinterpret_cast<segment*>((index - (mark - 1)) << segment_shift);
  // Past the segment's mapping another mapping may lie: not strata's.
  auto end = reinterpret_cast<std::uintptr_t>(seg) + segment_mapped_bytes(seg);
  return reinterpret_cast<std::uintptr_t>(p) < end ? seg : nullptr;
}
}  // namespace segment_map

namespace global_stats {
std::atomic<std::size_t> committed{0};
std::atomic<std::size_t> peak_committed{0};
std::atomic<std::size_t> reserved{0};
std::atomic<std::size_t> purged{0};
std::atomic<std::size_t> huge_in_use{0};
std::atomic<std::uint64_t> segments{0};
std::atomic<std::uint64_t> segments_cached{0};
std::atomic<std::uint64_t> pages{0};

void commit(std::size_t bytes) {
  std::size_t now = committed.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = peak_committed.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_committed.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace global_stats

namespace {

// Emptied normal segments kept mapped (purged after the delay, so only address
// space): two for each of 16 threads that use both page kinds. At 16,
// unified/threads made 4 OS calls a round and faulted 720 pages in again (at
// 32: 1 call, 490 pages).
constexpr std::size_t normal_cache_limit = 32;
// A normal segment may map its range in steps of this much: the process's first
// segment starts so (a program that allocates a few KiB maps 1 MiB, not 32), as
// does one the OS refuses the whole range (an address-space limit), which then
// grows a step at a time.
constexpr std::size_t segment_step = std::size_t{1} << 20;
constexpr std::size_t huge_cache_limit = 8;
constexpr std::size_t huge_cache_bytes = std::size_t{1} << 30;

// Empty segments kept mapped for reuse; purged after the purge delay.
struct segment_cache {
  os::mutex lock;
  segment* normal = nullptr;
  std::size_t normal_count = 0;
  segment* huge = nullptr;
  std::size_t huge_count = 0;
  std::size_t huge_bytes = 0;
  std::atomic<std::int64_t> next_purge{0};
};
segment_cache cache;

// Every mapped normal segment, so that a forced collection reaches them all.
struct mapped_segments {
  os::mutex lock;
  segment* first = nullptr;
};
mapped_segments mapped;

// Holds a segment's slice bitmaps for one scope (see segment::slices_busy).
class slices_guard {
 public:
  explicit slices_guard(segment* seg) : seg_(seg) {
    while (seg_->slices_busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  ~slices_guard() { seg_->slices_busy.store(false, std::memory_order_release); }
  slices_guard(const slices_guard&) = delete;
  slices_guard& operator=(const slices_guard&) = delete;

 private:
  segment* seg_;
};

os::purge_mode purge_mode() {
  return options::get(STRATA_OPTION_PURGE_DECOMMITS) != 0 ? os::purge_mode::dont_need
                                                          : os::purge_mode::lazy_free;
}

// Deadline for memory freed now, or -1 for "purge at once", 0 for "never".
std::int64_t purge_deadline() {
  long delay = options::get(STRATA_OPTION_PURGE_DELAY_MS);
  if (delay < 0) return 0;
  if (delay == 0) return -1;
  return clock_ms() + delay;
}

// Called with the cache locked.
void note_cache_deadline(std::int64_t deadline) {
  std::int64_t next = cache.next_purge.load(std::memory_order_relaxed);
  if (next == 0 || deadline < next) {
    cache.next_purge.store(deadline, std::memory_order_relaxed);
    purger_wake();
  }
}

// Slices per purge while a segment has live pages: a whole huge page when
// segments may be backed by transparent huge pages, since purging part of one
// splits it and the live rest loses its TLB reach; otherwise one slice.
std::size_t huge_page_slices() {
  bool backed = options::get(STRATA_OPTION_LARGE_OS_PAGES) != 0 || os::huge_pages_always();
  std::size_t slices = os::huge_page_size() / slice_size;
  return backed && slices > 1 && slices <= slice_count ? slices : 1;
}

// Purge all of a huge segment but its header.
void huge_purge(segment* seg) {
  if (seg->dirty_slices[0] == 0) return;
  if (os::purge(seg->slice_start(header_slices), seg->size - header_size, purge_mode())) {
    global_stats::purged.fetch_add(seg->size - header_size, std::memory_order_relaxed);
    global_stats::uncommit(seg->size - header_size);
    seg->dirty_slices[0] = 0;
  }
}

// Give the OS the part of a segment's mapping past its first `keep` bytes;
// whether it took it.
bool cut_mapping(segment* seg, std::size_t keep) {
  std::size_t cut = seg->size - keep;
  if (!os::release(reinterpret_cast<std::uint8_t*>(seg) + keep, cut)) return false;
  global_stats::reserved.fetch_sub(cut, std::memory_order_relaxed);
  segment_set_mapped_bytes(seg, keep);
  if (!seg->huge) forget_huge_advice_past(seg, keep);
  return true;
}

void unmap(segment* seg) {
  std::size_t size = seg->size;
  if (seg->huge && seg->pages[0].area >= seg->slice_start(slice_count))
    segment_map::remove_far_block(seg->pages[0].area);
  global_stats::reserved.fetch_sub(size, std::memory_order_relaxed);
  global_stats::segments.fetch_sub(1, std::memory_order_relaxed);
  segment_map::remove(seg);
  os::release(seg, size);
}

// Add a fresh normal segment to the mapped list.
void add_mapped(segment* seg) {
  std::lock_guard<os::mutex> guard(mapped.lock);
  seg->prev_mapped = nullptr;
  seg->next_mapped = mapped.first;
  if (mapped.first != nullptr) mapped.first->prev_mapped = seg;
  mapped.first = seg;
}

// Give an empty normal segment back to the OS, once off the mapped list (so
// no forced collection is purging it).
void unmap_normal(segment* seg) {
  {
    std::lock_guard<os::mutex> guard(mapped.lock);
    if (seg->prev_mapped != nullptr)
      seg->prev_mapped->next_mapped = seg->next_mapped;
    else
      mapped.first = seg->next_mapped;
    if (seg->next_mapped != nullptr) seg->next_mapped->prev_mapped = seg->prev_mapped;
  }
  global_stats::uncommit(header_size +
                         slice_bitmap::count(seg->dirty_slices, 0, slice_count) * slice_size);
  unmap(seg);
}

// STRATA_ARENA_RESERVE: address space reserved once, at the first segment,
// that segments are cut from (in order, never reused) before the heap asks
// the OS for more. A program can so claim its heap's range at start-up.
struct up_front_region {
  std::atomic<bool> reserved{false};
  os::mutex reserving;
  std::atomic<std::uintptr_t> next{0};
  std::uintptr_t end = 0;
};
up_front_region region;

// Reserve the up-front region, once, on the first segment's way.
void reserve_region() {
  std::lock_guard<os::mutex> guard(region.reserving);
  if (region.reserved.load(std::memory_order_relaxed)) return;
  auto bytes = static_cast<std::size_t>(options::get(STRATA_OPTION_ARENA_RESERVE));
  bytes = (bytes + segment_size - 1) & ~(segment_size - 1);
  void* base = bytes != 0 ? os::reserve_aligned(bytes, segment_size, true) : nullptr;
  if (base != nullptr) {
    region.end = reinterpret_cast<std::uintptr_t>(base) + bytes;
    region.next.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
  }
  region.reserved.store(true, std::memory_order_release);
}

// `size` bytes aligned to `alignment` from the up-front region; null when it
// is not configured or has no room left.
void* take_from_region(std::size_t size, std::size_t alignment) {
  if (!region.reserved.load(std::memory_order_acquire)) reserve_region();
  std::uintptr_t at = region.next.load(std::memory_order_acquire);
  for (;;) {
    if (at == 0) return nullptr;
    std::uintptr_t start = (at + alignment - 1) & ~(alignment - 1);
    if (start + size > region.end || start + size < start) return nullptr;
    if (region.next.compare_exchange_weak(at, start + size, std::memory_order_acq_rel))
      return reinterpret_cast<void*>(start);
  }
}

void unmap_huge(segment* seg);

// Unmap every cached segment, normal and huge: when the OS refuses a new
// reservation (an address-space limit, a full address space), the room they
// hold is what it needs. Whether there was any.
bool release_cached_segments() {
  segment* normal;
  segment* huge;
  {
    std::lock_guard<os::mutex> guard(cache.lock);
    normal = cache.normal;
    huge = cache.huge;
    global_stats::segments_cached.fetch_sub(cache.normal_count + cache.huge_count,
                                            std::memory_order_relaxed);
    cache.normal = cache.huge = nullptr;
    cache.normal_count = cache.huge_count = cache.huge_bytes = 0;
  }
  bool any = normal != nullptr || huge != nullptr;
  while (normal != nullptr) {  // outside the lock: munmap can take a while
    segment* next = normal->next;
    unmap_normal(normal);
    normal = next;
  }
  while (huge != nullptr) {
    segment* next = huge->next;
    unmap_huge(huge);
    huge = next;
  }
  return any;
}

// Reserve and map-register `size` bytes aligned to `alignment` for a segment,
// all its huge pages advised before anything touches them with `advise_huge`.
segment* map_segment(std::size_t size, std::size_t alignment, bool advise_huge = false) {
  stats_sample_peak();  // a new peak forms only as the heap grows; reuse from a cache is not growth
  auto* seg = static_cast<segment*>(take_from_region(size, alignment));
  if (seg == nullptr) seg = static_cast<segment*>(os::reserve_aligned(size, alignment, true));
  // Refused: the emptied segments the caches keep may hold the room it needs.
  if (seg == nullptr && release_cached_segments())
    seg = static_cast<segment*>(os::reserve_aligned(size, alignment, true));
  if (seg == nullptr) return nullptr;
  if (options::get(STRATA_OPTION_LARGE_OS_PAGES) != 0 || advise_huge)
    os::hint_huge_pages(seg, size);
  seg->size = size;
  seg->huge_advised = advise_huge ? ~std::uint32_t{0} : 0;
  seg->growth_blocked = false;
  global_stats::reserved.fetch_add(size, std::memory_order_relaxed);
  global_stats::segments.fetch_add(1, std::memory_order_relaxed);
  global_stats::commit(header_size);  // the header slices
  segment_map::add(seg);
  return seg;
}

// Whether normal segments map their whole range at once: secure mode's guard
// ends the range, and an up-front region is cut in whole segments.
bool segments_map_whole() {
  return secure_mode() || options::get(STRATA_OPTION_ARENA_RESERVE) != 0;
}

// Map a new normal segment: its whole range, but a step while the heap has
// reserved less than one segment's worth (the process's first segment, or
// the next one where another mapping stopped the first from growing) or where
// the OS refuses the whole range. A segment of one-block pages (64 KiB and
// up) takes its whole range even so: one that another mapping stopped from
// growing would lay a repeated phase's blocks out anew each time. With
// `advise_huge`, a whole range has all its huge pages advised.
segment* map_normal_segment(bool single_block_pages, bool advise_huge) {
  bool whole_only = segments_map_whole();
  bool small_heap = global_stats::reserved.load(std::memory_order_relaxed) < segment_size;
  if (whole_only || !small_heap || single_block_pages) {
    if (segment* seg = map_segment(segment_size, segment_size, advise_huge)) return seg;
    if (whole_only) return nullptr;
  }
  return map_segment(segment_step, segment_size);
}

// Map more of normal segment `seg` so that its first `slices` slices exist:
// twice what it maps where the OS allows (so a small heap maps little and a
// growing one few times), else the steps they need. False when refused; a
// range another mapping holds ends the segment's growth for good.
bool grow_segment(segment* seg, std::size_t slices) {
  std::size_t mapped = seg->size;
  auto* end = reinterpret_cast<std::uint8_t*>(seg) + mapped;
  std::size_t needed = (slices * slice_size + segment_step - 1) & ~(segment_step - 1);
  // Failing the doubling, a step that ends on a 2 MiB boundary: a transparent
  // huge page the mapping cuts in two is never backed by one.
  std::size_t whole_huge_pages =
      (slices * slice_size + 2 * segment_step - 1) & ~(2 * segment_step - 1);
  std::size_t doubled = 2 * mapped < segment_size ? 2 * mapped : segment_size;
  std::size_t grow = (needed > doubled ? needed : doubled) - mapped;
  void* p = os::reserve_at(end, grow);
  for (std::size_t fallback : {whole_huge_pages, needed}) {
    if (p != nullptr || fallback - mapped >= grow) continue;
    grow = fallback - mapped;
    p = os::reserve_at(end, grow);
  }
  if (p == nullptr) {
    if (os::last_failure().error == EEXIST) seg->growth_blocked = true;
    return false;
  }
  if (options::get(STRATA_OPTION_LARGE_OS_PAGES) != 0) os::hint_huge_pages(p, grow);
  segment_set_mapped_bytes(seg, mapped + grow);
  global_stats::reserved.fetch_add(grow, std::memory_order_relaxed);
  return true;
}

}  // namespace

std::int64_t clock_ms() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

namespace {
// Take the oldest cached segment `which` allows for pages of the given kind.
// A segment still holding memory goes to its own kind first, so a phase that
// frees and refills its blocks finds them laid out as before; to the other
// kind only rather than a fresh mapping. Null when there is no such segment.
segment* take_cached(cached_segment which, bool single_block_pages) {
  std::lock_guard<os::mutex> guard(cache.lock);
  segment** oldest = nullptr;
  for (segment** link = &cache.normal; *link != nullptr; link = &(*link)->next) {
    segment* seg = *link;
    bool dirty;
    {
      slices_guard guard(seg);
      dirty = slice_bitmap::next(seg->dirty_slices, slice_count, 0, true) != slice_count;
    }
    bool own_kind = seg->single_block_pages == single_block_pages;
    bool allowed = which == cached_segment::dirty_any_kind   ? dirty
                   : which == cached_segment::dirty_own_kind ? dirty && own_kind
                                                             : !dirty || own_kind;
    if (!allowed) continue;
    if (oldest == nullptr || seg->serial < (*oldest)->serial) oldest = link;
  }
  if (oldest == nullptr) return nullptr;
  segment* seg = *oldest;
  *oldest = seg->next;
  cache.normal_count--;
  global_stats::segments_cached.fetch_sub(1, std::memory_order_relaxed);
  return seg;
}

// The segment of many-block pages `owner` mapped last, or null.
const segment* newest_segment(const thread_context* owner) {
  const segment* newest = nullptr;
  if (owner == nullptr) return nullptr;
  for (const segment* seg = owner->segments; seg != nullptr; seg = seg->next) {
    if (!seg->single_block_pages && (newest == nullptr || seg->serial > newest->serial))
      newest = seg;
  }
  return newest;
}
}  // namespace

// Secure mode's guards in a fresh normal segment: the header past the
// descriptors, so no overflow reaches them from below, and the last slice,
// so none runs from one segment into the next. Never purged or claimed.
void protect_normal_segment(segment* seg) {
  std::size_t os_page = os::page_size();
  std::size_t metadata_end = (sizeof(segment) + os_page - 1) & ~(os_page - 1);
  auto* base = reinterpret_cast<std::uint8_t*>(seg);
  if (metadata_end < header_size) os::protect(base + metadata_end, header_size - metadata_end);
  os::protect(seg->slice_start(slice_count - 1), slice_size);
}

segment* segment_acquire(thread_context* owner, cached_segment which, bool single_block_pages) {
  static std::atomic<std::uint64_t> mapped_count{0};
  segment* seg = take_cached(which, single_block_pages);
  if (seg == nullptr && which != cached_segment::any) return nullptr;
  if (seg == nullptr) {
    seg = map_normal_segment(
        single_block_pages, !single_block_pages && streams_into_new_segment(newest_segment(owner)));
    if (seg == nullptr) return nullptr;
    seg->serial = mapped_count.fetch_add(1, std::memory_order_relaxed);
    std::memset(seg->dirty_slices, 0, sizeof(seg->dirty_slices));
    if (secure_mode()) protect_normal_segment(seg);
    add_mapped(seg);
  }
  seg->huge = false;
  seg->single_block_pages = single_block_pages;
  seg->owner = owner;
  seg->next = seg->prev = nullptr;
  seg->purge_deadline = 0;
  slices_guard guard(seg);
  seg->pages_in_use = 0;
  std::memset(seg->free_slices, 0xff, sizeof(seg->free_slices));
  slice_bitmap::assign(seg->free_slices, 0, header_slices, false);  // this header
  if (secure_mode()) slice_bitmap::assign(seg->free_slices, slice_count - 1, 1, false);  // guard
  return seg;
}

void segment_release(segment* seg) {
  seg->owner = nullptr;
  std::int64_t deadline = purge_deadline();
  if (deadline < 0) segment_purge(seg);
  std::lock_guard<os::mutex> guard(cache.lock);
  if (cache.normal_count >= normal_cache_limit) {
    unmap_normal(seg);
    return;
  }
  seg->purge_deadline = deadline > 0 ? deadline : 0;
  if (deadline > 0) note_cache_deadline(deadline);
  seg->next = cache.normal;
  cache.normal = seg;
  cache.normal_count++;
  global_stats::segments_cached.fetch_add(1, std::memory_order_relaxed);
}

std::size_t largest_request() {
  static std::atomic<std::size_t> limit{0};
  std::size_t known = limit.load(std::memory_order_relaxed);
  if (known != 0) return known;
  struct sysinfo info {};
  std::size_t bytes = SIZE_MAX >> 2;
  if (::sysinfo(&info) == 0) {
    auto unit = static_cast<std::size_t>(info.mem_unit == 0 ? 1 : info.mem_unit);
    std::size_t machine = (static_cast<std::size_t>(info.totalram) + info.totalswap) * unit;
    if (machine != 0 && machine < bytes) bytes = machine;
  }
  limit.store(bytes, std::memory_order_relaxed);
  return bytes;
}

namespace {

// Cut a cached huge segment's mapping down to `total` bytes, its tail's pages
// going back to the OS with it.
void shrink_huge(segment* seg, std::size_t total) {
  std::size_t cut = seg->size - total;
  if (cut_mapping(seg, total) && seg->dirty_slices[0] != 0) global_stats::uncommit(cut);
}

// Grow a cached huge segment's mapping to `total` bytes: in place when the
// range after it is free, else moved by the OS with its pages carried over.
// The segment, wherever it now is; null when the OS refused both.
segment* grow_huge(segment* seg, std::size_t total) {
  stats_sample_peak();  // the heap grows: a new peak may form
  std::size_t grow = total - seg->size;
  if (!os::extend_in_place(seg, seg->size, total)) {
    segment_map::remove(seg);  // once moved, its old range may hold another segment
    auto* moved = static_cast<segment*>(os::move_aligned(seg, seg->size, total, segment_size));
    if (moved == nullptr) {
      segment_map::add(seg);
      return nullptr;
    }
    seg = moved;
    segment_map::add(seg);
  }
  global_stats::reserved.fetch_add(grow, std::memory_order_relaxed);
  if (seg->dirty_slices[0] != 0) global_stats::commit(grow);
  segment_set_mapped_bytes(seg, total);
  return seg;
}

// Put a huge segment back in the cache, first in line.
void return_cached_huge(segment* seg) {
  std::lock_guard<os::mutex> guard(cache.lock);
  seg->next = cache.huge;
  cache.huge = seg;
  cache.huge_count++;
  cache.huge_bytes += seg->size;
  global_stats::segments_cached.fetch_add(1, std::memory_order_relaxed);
}

// Take the cached huge segment `link` points at out of the cache, locked.
segment* unlink_cached_huge(segment** link) {
  segment* seg = *link;
  *link = seg->next;
  cache.huge_count--;
  cache.huge_bytes -= seg->size;
  global_stats::segments_cached.fetch_sub(1, std::memory_order_relaxed);
  return seg;
}

// A cached huge segment sized for `total` bytes, or null: the smallest that
// holds the request, else, when `resizable`, the largest of at least half the
// request, grown; first among those still holding memory, then among all, so
// that no purged segment is faulted in while one holding memory stays cached
// beside it. So a program that frees blocks and asks for others of other
// sizes reuses the pages it has touched instead of faulting fresh ones in. A
// segment more than three times the request has its tail cut, so a block keeps
// at most twice its own size resident beyond it; one of at most a segment's
// size is kept whole, as huge_segment_reuse keeps it: a loop over blocks of
// 5-25 MB otherwise cut its one mapping for an 8.1 MiB block and mapped a second
// for the next 25 MB one, and kept both. (Secure mode's guard page
// ends each mapping: it takes only a segment within a quarter of the request.)
segment* take_cached_huge(std::size_t total, bool resizable) {
  segment* seg = nullptr;
  {
    std::lock_guard<os::mutex> guard(cache.lock);
    // [0]: among those still holding memory, [1]: among all.
    segment** best[2] = {nullptr, nullptr};
    segment** largest[2] = {nullptr, nullptr};
    for (segment** link = &cache.huge; *link != nullptr; link = &(*link)->next) {
      segment* s = *link;
      bool fits = s->size >= total && (resizable || s->size - total <= total / 4);
      // One under half the request is not grown: most of the block would be
      // fresh pages anyway, which calloc need not clear if they come alone.
      bool growable = !fits && resizable && s->size >= total / 2;
      for (int kind = s->dirty_slices[0] != 0 ? 0 : 1; kind < 2; ++kind) {
        if (fits && (best[kind] == nullptr || s->size < (*best[kind])->size)) best[kind] = link;
        if (growable && (largest[kind] == nullptr || s->size > (*largest[kind])->size))
          largest[kind] = link;
      }
    }
    segment** chosen = best[0] != nullptr      ? best[0]
                       : largest[0] != nullptr ? largest[0]
                       : best[1] != nullptr    ? best[1]
                                               : largest[1];
    if (chosen == nullptr) return nullptr;
    seg = unlink_cached_huge(chosen);
  }
  if (seg->size >= total) {
    if (seg->size > segment_size && seg->size - total > 2 * total) shrink_huge(seg, total);
    return seg;
  }
  if (segment* grown = grow_huge(seg, total)) return grown;
  return_cached_huge(seg);
  return nullptr;
}

// Make `seg` (fresh when `fresh`) hold one huge page whose block starts
// `offset` bytes in, with `guard` bytes of guard page after it.
segment* set_up_huge(segment* seg, std::size_t offset, std::size_t guard, bool fresh) {
  bool far = offset >= segment_size;
  if (seg->dirty_slices[0] == 0) global_stats::commit(seg->size - header_size);
  seg->dirty_slices[0] = 1;  // the whole block counts as committed while in use
  seg->huge = true;
  seg->owner = nullptr;
  seg->next = seg->prev = nullptr;
  seg->purge_deadline = 0;
  seg->pages_in_use = 1;
  // The block starts in the first segment-sized unit; any pointer there is page 0's.
  for (std::uint16_t& head : seg->slice_head) head = 0;
  page* pg = &seg->pages[0];
  pg->area = reinterpret_cast<std::uint8_t*>(seg) + offset;
  pg->block_size = seg->size - offset - guard;
  // The guard of a cached segment is in place already: only a fresh one needs it.
  if (guard != 0 && fresh)
    os::protect(reinterpret_cast<std::uint8_t*>(seg) + seg->size - guard, guard);
  pg->size_class = class_count;
  pg->free = nullptr;
  pg->free_map = 0;
  pg->counts = 1;
  pg->capacity = pg->reserved = 1;
  pg->slice_index = 0;
  pg->slice_count = 1;
  pg->thread_free.store(0, std::memory_order_relaxed);
  pg->next = pg->prev = nullptr;
  page_set_first_in_queue(pg, false);
  global_stats::huge_in_use.fetch_add(pg->block_size, std::memory_order_relaxed);
  if (far) segment_map::add_far_block(seg, pg->area);
  return seg;
}

// Bytes a huge segment maps for a block of `size` bytes at `offset`, with `guard`.
std::size_t huge_mapping_bytes(std::size_t offset, std::size_t size, std::size_t guard) {
  std::size_t os_page = os::page_size();
  return ((offset + size + os_page - 1) & ~(os_page - 1)) + guard;
}
}  // namespace

segment* huge_segment_acquire(std::size_t size, std::size_t alignment, bool* zeroed) {
  std::size_t offset = alignment > header_size ? alignment : header_size;
  if (size < min_block_size) size = min_block_size;  // malloc(0) still owns a block
  *zeroed = false;
  // A block aligned to the segment size or more starts past the first unit,
  // at most 128 units on (the segment map's byte holds the distance).
  bool far = offset >= segment_size;
  if (size > largest_request() || offset > 128 * segment_size) return nullptr;
  // Secure mode puts a guard page after the block: an overflow faults at once.
  std::size_t guard = secure_mode() ? os::page_size() : 0;
  std::size_t total = huge_mapping_bytes(offset, size, guard);
  segment* seg = far ? nullptr : take_cached_huge(total, guard == 0);
  bool fresh = false;
  if (seg == nullptr) {
    seg = map_segment(total, far ? alignment : segment_size);
    if (seg == nullptr) return nullptr;
    seg->dirty_slices[0] = 0;
    fresh = true;
    *zeroed = true;  // fresh from the OS
  } else {
    *zeroed = seg->dirty_slices[0] == 0 && purge_mode() == os::purge_mode::dont_need;
  }
  return set_up_huge(seg, offset, guard, fresh);
}

segment* huge_segment_reuse(std::size_t size) {
  if (secure_mode()) return nullptr;  // its cached mappings each fit one size, guard and all
  std::size_t total = huge_mapping_bytes(header_size, size, 0);
  segment* seg = nullptr;
  {
    std::lock_guard<os::mutex> guard(cache.lock);
    segment** best = nullptr;
    for (segment** link = &cache.huge; *link != nullptr; link = &(*link)->next) {
      segment* s = *link;
      bool fits = s->dirty_slices[0] != 0 && s->size >= total && s->size <= segment_size;
      if (fits && (best == nullptr || s->size < (*best)->size)) best = link;
    }
    if (best == nullptr) return nullptr;
    seg = unlink_cached_huge(best);
  }
  return set_up_huge(seg, header_size, 0, false);
}

namespace {
// Give a huge segment's memory back to the OS for good.
void unmap_huge(segment* seg) {
  if (seg->dirty_slices[0] != 0) global_stats::uncommit(seg->size - header_size);
  global_stats::uncommit(header_size);
  unmap(seg);
}
}  // namespace

void huge_segment_release(segment* seg) {
  global_stats::huge_in_use.fetch_sub(seg->pages[0].block_size, std::memory_order_relaxed);
  // No longer a page: a second free of the block is told from a first.
  seg->pages[0].slice_count = 0;
  seg->pages[0].owner.store(0, std::memory_order_relaxed);
  std::int64_t deadline = purge_deadline();
  if (deadline < 0) huge_purge(seg);
  segment* evicted = nullptr;
  {
    std::lock_guard<os::mutex> guard(cache.lock);
    // A far-aligned block's segment is not cached: its layout suits no other request.
    if (seg->size > huge_cache_bytes || seg->pages[0].area >= seg->slice_start(slice_count)) {
      evicted = seg;
      seg->next = nullptr;
    } else {
      // Make room by dropping the entries freed longest ago (the list's tail):
      // the block freed now is the likeliest to be asked for again.
      while (cache.huge_count >= huge_cache_limit ||
             cache.huge_bytes + seg->size > huge_cache_bytes) {
        segment** link = &cache.huge;
        while ((*link)->next != nullptr) link = &(*link)->next;
        segment* oldest = *link;
        *link = nullptr;
        cache.huge_count--;
        cache.huge_bytes -= oldest->size;
        global_stats::segments_cached.fetch_sub(1, std::memory_order_relaxed);
        oldest->next = evicted;
        evicted = oldest;
      }
      seg->purge_deadline = deadline > 0 ? deadline : 0;
      if (deadline > 0) note_cache_deadline(deadline);
      seg->next = cache.huge;
      cache.huge = seg;
      cache.huge_count++;
      cache.huge_bytes += seg->size;
      global_stats::segments_cached.fetch_add(1, std::memory_order_relaxed);
    }
  }
  while (evicted != nullptr) {  // outside the lock: munmap can take a while
    segment* next = evicted->next;
    unmap_huge(evicted);
    evicted = next;
  }
}

namespace {
// Where a run of `count` slices for a page of class `cls` goes among the slices
// `avail` marks. With slice_claim::class_place, only where a page of the class
// began before: a phase that frees and reallocates its blocks then finds each
// page's memory as that class left it, where another class's page would have
// left the tail of a larger block, or blocks it never handed out, unwritten
// (xsigma/mixed-stress faulted 67 pages in its second round, 10 with this).
// Other memory not yet purged is claimed best-fit: a one-slice page takes a
// lone dirty slice first, a longer page the shortest dirty run that holds it,
// so the run a freed large page leaves stays whole for the next large page
// instead of being carved by small ones. The rest is claimed lowest first,
// which keeps a segment's mapping short. So is all of a segment of one-block
// pages: its freed pages are no place for small ones, and claiming dirty runs
// as fresh ones were claimed lays a repeated phase's blocks out as the first
// round did.
std::size_t place_run(const segment* seg, const std::uint64_t* avail, std::size_t count,
                      std::size_t cls, slice_claim which) {
  if (which == slice_claim::class_place)
    return slice_bitmap::find_run_at(avail, seg->class_places[cls], slice_count, count);
  if (which != slice_claim::dirty || seg->single_block_pages)
    return slice_bitmap::find_run(avail, slice_count, header_slices, count);
  if (count > 1) return slice_bitmap::find_shortest_run(avail, slice_count, header_slices, count);
  std::size_t lone = slice_bitmap::find_lone(avail, slice_count, header_slices);
  return lone != slice_count ? lone : slice_bitmap::find_run(avail, slice_count, header_slices, 1);
}

// The slices [first, first + count) now hold a page: they are no class's place.
void forget_places(segment* seg, std::size_t first, std::size_t count) {
  for (std::size_t s = first; s < first + count; ++s) {
    if (seg->place_class[s] == 0) continue;
    seg->class_places[seg->place_class[s] - 1][s / 64] &= ~(std::uint64_t{1} << (s % 64));
    seg->place_class[s] = 0;
  }
}

// Take the free slices [start, start + count) for the page whose first slice
// is `head`, mapping more of the segment if they reach past its mapping;
// false when it cannot. `fresh` gets how many of them held no memory.
// Called with the slices guard held.
bool take_slices(segment* seg, std::size_t start, std::size_t count, std::size_t head,
                 std::size_t& fresh) {
  if (start + count > seg->size / slice_size &&
      (seg->growth_blocked || !grow_segment(seg, start + count)))
    return false;
  fresh = count - slice_bitmap::count(seg->dirty_slices, start, count);
  if (fresh != 0) {
    advise_untouched_huge_pages(seg, start, count);
    global_stats::commit(fresh * slice_size);
  }
  slice_bitmap::assign(seg->free_slices, start, count, false);
  slice_bitmap::assign(seg->dirty_slices, start, count, false);
  forget_places(seg, start, count);
  for (std::size_t s = start; s < start + count; ++s)
    seg->slice_head[s] = static_cast<std::uint16_t>(head);
  return true;
}
}  // namespace

std::size_t segment_claim_slices(segment* seg, std::size_t count, std::size_t cls,
                                 slice_claim which, bool* zeroed) {
  bool dirty_only = which == slice_claim::class_place || which == slice_claim::dirty;
  slices_guard guard(seg);
  std::uint64_t avail[bitmap_words];
  for (std::size_t w = 0; w < bitmap_words; ++w)
    avail[w] = seg->free_slices[w] & (dirty_only ? seg->dirty_slices[w] : ~std::uint64_t{0});
  // Slices past the mapping serve once it grows over them; never where it cannot.
  std::size_t mapped = seg->size / slice_size;
  if (seg->growth_blocked || which != slice_claim::growing)
    slice_bitmap::assign(avail, mapped, slice_count - mapped, false);
  std::size_t start = place_run(seg, avail, count, cls, which);
  // The lowest run reaches past the mapping only when no run fits inside it.
  std::size_t fresh = 0;
  if (start == slice_count || !take_slices(seg, start, count, start, fresh)) return 0;
  // Memory purged with MADV_FREE may keep what it held until the kernel needs it.
  if (zeroed != nullptr) *zeroed = fresh == count && purge_mode() == os::purge_mode::dont_need;
  seg->pages_in_use++;
  global_stats::pages.fetch_add(1, std::memory_order_relaxed);
  return start;
}

bool segment_extend_page(segment* seg, page* pg, std::size_t count) {
  slices_guard guard(seg);
  std::size_t start = pg->slice_index + pg->slice_count;
  if (start + count > slice_count || slice_bitmap::count(seg->free_slices, start, count) != count)
    return false;
  std::size_t fresh;
  return take_slices(seg, start, count, pg->slice_index, fresh);
}

void segment_free_slices(segment* seg, std::size_t first, std::size_t count) {
  slices_guard guard(seg);
  slice_bitmap::assign(seg->free_slices, first, count, true);
  slice_bitmap::assign(seg->dirty_slices, first, count, true);
  std::size_t cls = seg->pages[first].size_class;
  if (cls < class_count) {  // the page's first slice is its class's place
    seg->class_places[cls][first / 64] |= std::uint64_t{1} << (first % 64);
    seg->place_class[first] = static_cast<std::uint8_t>(cls + 1);
  }
  seg->pages[first].slice_count = 0;
  // A pointer into these slices now leads to the header's descriptor, no page's.
  for (std::size_t s = first; s < first + count; ++s) seg->slice_head[s] = 0;
  seg->pages_in_use--;
  global_stats::pages.fetch_sub(1, std::memory_order_relaxed);
}

bool segment_is_empty(const segment* seg) {
  return seg->pages_in_use == 0;
}

namespace {
// Purge the free dirty slices of `seg`, its bitmaps held. While it has live
// pages and may be backed by transparent huge pages, only whole free huge pages.
// An empty normal segment, once purged, keeps only its first step mapped: a
// thread that keeps its last segment holds 1 MiB of address space, not up to
// 32, and a process under an address-space limit gets the rest back. Called
// with the bitmaps held, as the owner's growth is.
void shrink_empty(segment* seg) {
  if (seg->pages_in_use != 0 || seg->huge || seg->size <= segment_step || segments_map_whole())
    return;
  if (!cut_mapping(seg, segment_step)) return;
  std::size_t first_cut = segment_step / slice_size;
  // Slices a failed purge left dirty leave with the mapping.
  global_stats::uncommit(
      slice_bitmap::count(seg->dirty_slices, first_cut, slice_count - first_cut) * slice_size);
  slice_bitmap::assign(seg->dirty_slices, first_cut, slice_count - first_cut, false);
}

void purge_free_slices(segment* seg) {
  std::size_t resident = mark_free_advised_huge_pages_dirty(seg);
  global_stats::committed.fetch_add(resident * slice_size, std::memory_order_relaxed);
  std::size_t granule = seg->pages_in_use != 0 ? huge_page_slices() : 1;
  for (std::size_t i = header_slices; i < slice_count;) {
    std::size_t run_start = slice_bitmap::next(seg->dirty_slices, slice_count, i, true);
    i = slice_bitmap::next(seg->dirty_slices, slice_count, run_start, false);
    std::size_t first = (run_start + granule - 1) / granule * granule;
    std::size_t end = i / granule * granule;
    if (first >= end) continue;  // no whole huge page free: it stays dirty for later
    std::size_t bytes = (end - first) * slice_size;
    if (os::purge(seg->slice_start(first), bytes, purge_mode())) {
      slice_bitmap::assign(seg->dirty_slices, first, end - first, false);
      global_stats::purged.fetch_add(bytes, std::memory_order_relaxed);
      global_stats::uncommit(bytes);
    }
  }
  shrink_empty(seg);
}
}  // namespace

void segment_purge(segment* seg) {
  {
    slices_guard guard(seg);
    purge_free_slices(seg);
  }
  seg->purge_deadline = 0;
}

void segment_purge_everywhere() {
  std::lock_guard<os::mutex> guard(mapped.lock);
  for (segment* seg = mapped.first; seg != nullptr; seg = seg->next_mapped) {
    // Busy: its owner is claiming or freeing slices, and purges them itself in time.
    if (seg->slices_busy.exchange(true, std::memory_order_acquire)) continue;
    purge_free_slices(seg);
    seg->slices_busy.store(false, std::memory_order_release);
  }
}

void segment_purge_freed_block(void* b, std::size_t bytes) {
  // Whole huge pages only where segments may be backed by them: see huge_page_slices.
  std::size_t granule = huge_page_slices() > 1 ? os::huge_page_size() : os::page_size();
  auto start = reinterpret_cast<std::uintptr_t>(b) + os::page_size();
  start = (start + granule - 1) & ~(granule - 1);
  std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(b) + bytes) & ~(granule - 1);
  if (start < end) os::purge(reinterpret_cast<void*>(start), end - start, purge_mode());
}

void segment_cache_lock() {
  cache.lock.lock();
  mapped.lock.lock();
}
void segment_cache_unlock() {
  mapped.lock.unlock();
  cache.lock.unlock();
}

namespace {
// Purge the cached segments whose delay expired (all with `force`), the cache locked.
void purge_cached(bool force) {
  std::int64_t now = clock_ms();
  std::int64_t earliest = 0;
  // A deadline of 0 means "never": only a forced collection purges those.
  auto due = [&](segment* s) {
    if (force || (s->purge_deadline != 0 && s->purge_deadline <= now)) return true;
    if (s->purge_deadline != 0 && (earliest == 0 || s->purge_deadline < earliest))
      earliest = s->purge_deadline;
    return false;
  };
  for (segment* s = cache.normal; s != nullptr; s = s->next)
    if (due(s)) segment_purge(s);
  for (segment* s = cache.huge; s != nullptr; s = s->next) {
    if (due(s)) {
      huge_purge(s);
      s->purge_deadline = 0;
    }
  }
  cache.next_purge.store(earliest, std::memory_order_relaxed);
}

// purge_cached under the cache's lock. Out of line, so that segment_cache_collect,
// asked on every refill, returns with nothing due before saving any register.
__attribute__((noinline)) void purge_cached_locked(bool force) {
  std::lock_guard<os::mutex> guard(cache.lock);
  purge_cached(force);
}
}  // namespace

void segment_cache_collect(bool force) {
  std::int64_t next = cache.next_purge.load(std::memory_order_relaxed);
  if (!force && (next == 0 || clock_ms() < next)) return;
  purge_cached_locked(force);
}

std::int64_t segment_cache_deadline() {
  return cache.next_purge.load(std::memory_order_relaxed);
}

}  // namespace strata::heap
