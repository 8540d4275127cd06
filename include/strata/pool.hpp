// strata pools: fixed-size blocks with O(1) allocate and free, the slab of
// pages they refill from, and object_pool<T> that constructs and destroys.
//
//   strata::fixed_pool<> pool(64);          // 64-byte blocks, one thread
//   void* p = pool.allocate();              // pop a free list, or bump a chunk
//   pool.deallocate(p);                     // push; no search, no bitset scan
//
// A pool takes chunks of chunk_bytes (a power of two) aligned to their size,
// so a block finds its chunk, and the chunk its pool, with a mask.
#ifndef STRATA_POOL_HPP
#define STRATA_POOL_HPP

#include <strata/ledger.hpp>
#include <strata/no_lock.hpp>
#include <strata/resource.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

// ---- locks -----------------------------------------------------------------

// A test-and-test-and-set lock for short critical sections (a pop or a push).
class spin_lock {
 public:
  // Spin while the holder is inside a few instructions; yield if it is not.
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins > 64) std::this_thread::yield();
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

// ---- ownership -------------------------------------------------------------

namespace detail {

// The bases of the chunks (or pages) an allocator holds, so a pointer can be
// tested for ownership without reading the memory it points into: freeing a
// foreign pointer must be reported, not fault on a header that is not mapped.
// Any thread may test without a lock; inserts happen under the owner's lock.
class chunk_set {
 public:
  // Bases are multiples of 2^shift.
  explicit chunk_set(unsigned shift) noexcept : shift_(shift) {}
  chunk_set(const chunk_set&) = delete;
  chunk_set& operator=(const chunk_set&) = delete;
  // Tables replaced by bigger ones stay until here: a reader may still be in one.
  // Emptied, so a call on its destroyed owner finds no base rather than freed tables.
  ~chunk_set() {
    for (table* t = current_.load(std::memory_order_relaxed); t != nullptr;) {
      table* older = t->older;
      delete t;
      t = older;
    }
    current_.store(nullptr, std::memory_order_relaxed);
  }

  // Whether `base` was inserted: one multiply and, at most half full, a probe or two.
  // An empty slot holds 1, no chunk's base, so base 0 (a null pointer's) is never found.
  bool contains(std::uintptr_t base) const noexcept {
    const table* t = current_.load(std::memory_order_acquire);
    if (t == nullptr) return false;
    for (std::size_t i = t->slot_of(base >> shift_);; i = (i + 1) & t->mask) {
      std::uintptr_t key = t->slots[i].load(std::memory_order_acquire);
      if (key == base) return true;
      if (key == empty) return false;
    }
  }

  // Add `base` (not zero, not yet in the set); called under the owner's lock.
  void insert(std::uintptr_t base) {
    table* t = current_.load(std::memory_order_relaxed);
    if (t == nullptr || (count_ + 1) * 2 > t->mask + 1) t = grow(t);
    place(*t, base);
    ++count_;
  }

 private:
  struct table {
    table(unsigned log2_slots, table* previous)
        : mask((std::size_t{1} << log2_slots) - 1),
          bits(log2_slots),
          slots(std::make_unique<std::atomic<std::uintptr_t>[]>(mask + 1)),
          older(previous) {
      for (std::size_t i = 0; i <= mask; ++i) slots[i].store(empty, std::memory_order_relaxed);
    }
    // Fibonacci hashing: the top bits of the product spread chunk numbers.
    std::size_t slot_of(std::uintptr_t number) const noexcept {
      return static_cast<std::size_t>((number * 0x9E3779B97F4A7C15u) >> (64 - bits));
    }
    std::size_t mask;
    unsigned bits;
    std::unique_ptr<std::atomic<std::uintptr_t>[]> slots;
    table* older;
  };

  // Store `base` in the first empty slot of its probe sequence.
  void place(table& t, std::uintptr_t base) noexcept {
    std::size_t i = t.slot_of(base >> shift_);
    while (t.slots[i].load(std::memory_order_relaxed) != empty) i = (i + 1) & t.mask;
    t.slots[i].store(base, std::memory_order_release);
  }

  // A table twice the size holding every key, published for readers.
  [[gnu::noinline]] table* grow(table* old) {
    auto* bigger = new table(old == nullptr ? 4 : old->bits + 1, old);
    if (old != nullptr)
      for (std::size_t i = 0; i <= old->mask; ++i)
        if (std::uintptr_t key = old->slots[i].load(std::memory_order_relaxed); key != empty)
          place(*bigger, key);
    current_.store(bigger, std::memory_order_release);
    return bigger;
  }

  // The mark of an empty slot: 1 is no chunk's base (bases are page-aligned).
  static constexpr std::uintptr_t empty = 1;

  std::atomic<table*> current_{nullptr};
  std::size_t count_ = 0;
  unsigned shift_;
};

// A value no live block holds in its second word, by which a freed block is
// recognised: the block's address mixed with a secret of its allocator, so a
// block of an older pool at the same address does not pass for one freed here.
inline std::uintptr_t next_free_tag_secret() noexcept {
  static std::atomic<std::uintptr_t> serial{0};
  std::uintptr_t x = serial.fetch_add(1, std::memory_order_relaxed) + 0x5DEECE66Du;
  x *= 0x9E3779B97F4A7C15u;
  return x ^ (x >> 29) ^ reinterpret_cast<std::uintptr_t>(&serial);
}

// What an unchecked pool holds instead of a chunk_set.
struct no_chunk_set {
  explicit constexpr no_chunk_set(unsigned) noexcept {}
};

// Read a word of allocator metadata kept inside a block, which the tools may
// see as poisoned (a block never handed out) or as the user's (a live one).
[[gnu::no_sanitize_address]] inline std::uintptr_t read_metadata_word(const void* p) noexcept {
  return *static_cast<const std::uintptr_t*>(p);
}

// log2 of a power of two (0 for 0, which constructors reject afterwards).
constexpr unsigned log2_of(std::size_t power_of_two) noexcept {
  return power_of_two == 0 ? 0 : static_cast<unsigned>(__builtin_ctzll(power_of_two));
}

}  // namespace detail

// ---- slab ------------------------------------------------------------------

// A thread-safe source of pages of page_bytes (a power of two), each aligned to
// its size, taken from the upstream pages_per_refill at a time and kept until
// the slab is destroyed. It is a host resource for requests of one page.
template <host_resource Upstream = malloc_resource>
class slab {
 public:
  explicit slab(std::size_t page_bytes = 64 * 1024, std::size_t pages_per_refill = 16,
                Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)),
        page_bytes_(page_bytes),
        pages_per_refill_(pages_per_refill),
        pages_(is_valid_alignment(page_bytes) ? detail::log2_of(page_bytes) : 0) {
    if (!is_valid_alignment(page_bytes) || page_bytes < 4096 || pages_per_refill == 0)
      throw std::invalid_argument("strata: slab pages must be a power of two >= 4096 bytes");
    checked_multiply(page_bytes_, pages_per_refill_);
  }
  slab(const slab&) = delete;
  slab& operator=(const slab&) = delete;

  // Every refill goes back to the upstream; pages still in use become invalid.
  // A second destructor call aborts; a later allocate finds no free page and
  // aborts in refill(), a later deallocate finds no page of the slab's.
  ~slab() {
    life_.end("slab destroyed twice", "slab::~slab", this);
    for (void* group : groups_) {
      annotate_allocated(group, page_bytes_ * pages_per_refill_);
      upstream_.deallocate(group, page_bytes_ * pages_per_refill_, page_bytes_);
    }
    *static_cast<free_page* volatile*>(&free_pages_) = nullptr;
  }

  // One page; `bytes` and `alignment` may not exceed the page size.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    if (bytes > page_bytes_ || alignment > page_bytes_) detail::throw_bad_alloc();
    std::lock_guard guard(lock_);
    if (free_pages_ == nullptr) refill();
    free_page* page = free_pages_;
    annotate_allocated(page, page_bytes_);
    free_pages_ = page->next;
    page->tag = 0;
    --pages_free_;
    return page;
  }

  // Take a page back for the next allocate. A pointer that is not the start of
  // one of its pages, or a page already free, aborts.
  void deallocate(void* page, std::size_t = 0, std::size_t = default_alignment) {
    auto address = reinterpret_cast<std::uintptr_t>(page);
    if ((address & (page_bytes_ - 1)) != 0 || !owns(page)) [[unlikely]]
      report_not_a_page(page);
    std::lock_guard guard(lock_);  // the free mark is read under it: two frees race here
    if (detail::read_metadata_word(&static_cast<free_page*>(page)->tag) == freed_tag(page))
        [[unlikely]]
      detail::report_misuse("double free of a slab page", "slab::deallocate", page);
    push(page);
  }

  // Whether `p` points into a page of this slab; reads nothing at `p`, takes no lock.
  bool owns(const void* p) const noexcept {
    return pages_.contains(reinterpret_cast<std::uintptr_t>(p) & ~(page_bytes_ - 1));
  }

  // Whether `p` points into a page of this slab that is handed out now; reads
  // the page's second word only once the page is known to be the slab's.
  bool in_use(const void* p) const noexcept {
    auto* page = reinterpret_cast<const free_page*>(reinterpret_cast<std::uintptr_t>(p) &
                                                    ~(page_bytes_ - 1));
    return owns(p) && detail::read_metadata_word(&page->tag) != freed_tag(page);
  }

  bool is_equal(const slab& other) const noexcept { return this == &other; }
  std::size_t page_bytes() const noexcept { return page_bytes_; }
  // This resource's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }
  // Pages taken from the upstream, and of those, pages not handed out now.
  std::size_t pages_held() const {
    std::lock_guard guard(lock_);
    return groups_.size() * pages_per_refill_;
  }
  std::size_t pages_free() const {
    std::lock_guard guard(lock_);
    return pages_free_;
  }

 private:
  struct free_page {
    free_page* next;
    std::uintptr_t tag;  // freed_tag() while the page is free
  };

  // One upstream call for pages_per_refill pages (none for a destroyed slab).
  void refill() {
    if (!life_.alive()) [[unlikely]]
      detail::report_misuse("use of a destroyed slab", "slab::allocate", this);
    auto* group =
        static_cast<char*>(upstream_.allocate(page_bytes_ * pages_per_refill_, page_bytes_));
    groups_.push_back(group);
    ledger_.took(page_bytes_ * pages_per_refill_);
    for (std::size_t i = pages_per_refill_; i-- > 0;) {
      pages_.insert(reinterpret_cast<std::uintptr_t>(group + i * page_bytes_));
      push(group + i * page_bytes_);
    }
  }

  // What a free page holds in its second word.
  std::uintptr_t freed_tag(const void* page) const noexcept {
    return reinterpret_cast<std::uintptr_t>(page) ^ secret_;
  }

  void push(void* page) noexcept {
    auto* p = static_cast<free_page*>(page);
    p->next = free_pages_;
    p->tag = freed_tag(page);
    free_pages_ = p;
    ++pages_free_;
    annotate_released(static_cast<char*>(page) + sizeof(free_page),
                      page_bytes_ - sizeof(free_page));
  }

  // A pointer that is not a page of this slab, or a call on a destroyed slab.
  [[noreturn, gnu::cold, gnu::noinline]] void report_not_a_page(const void* page) const noexcept {
    if (!life_.alive()) detail::report_misuse("use of a destroyed slab", "slab::deallocate", this);
    detail::report_misuse("page freed into the wrong slab", "slab::deallocate", page);
  }

  mutable std::mutex lock_;
  free_page* free_pages_ = nullptr;
  std::size_t pages_free_ = 0;
  std::vector<void*> groups_;
  [[no_unique_address]] Upstream upstream_;
  std::size_t page_bytes_;
  std::size_t pages_per_refill_;
  detail::chunk_set pages_;
  const std::uintptr_t secret_ = detail::next_free_tag_secret();
  detail::lifetime_word life_;
  ledger_entry ledger_{"slab", upstream_};
};

// ---- fixed-size pool -------------------------------------------------------

// Compile-time choices of a pool.
struct pool_config {
  // Check every freed block: a pointer of no block of this pool, a pointer
  // inside a block, a block never handed out and a double free abort. Costs
  // blocks of at least 16 bytes and a few instructions per free; false drops
  // the checks for callers that can prove their frees right.
  bool checked = true;
};

// Blocks of one size. Lock is no_lock (one thread) or spin_lock (any thread).
template <host_resource Upstream = malloc_resource, class Lock = no_lock,
          pool_config Config = pool_config{}>
class basic_fixed_pool {
 public:
  // Blocks of block_bytes aligned to block_alignment, carved from chunks of
  // chunk_bytes (a power of two, aligned to itself) taken from the upstream.
  explicit basic_fixed_pool(std::size_t block_bytes,
                            std::size_t block_alignment = default_alignment,
                            std::size_t chunk_bytes = 64 * 1024, Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)),
        chunk_bytes_(chunk_bytes),
        block_alignment_(block_alignment) {
    check_alignment(block_alignment);
    if (!is_valid_alignment(chunk_bytes) || chunk_bytes > max_chunk_bytes)
      throw std::invalid_argument("strata: pool chunk size must be a power of two up to 4 GiB");
    if (block_bytes > chunk_bytes || block_alignment > chunk_bytes)  // before any rounding
      throw std::invalid_argument("strata: pool block does not fit in a chunk");
    stride_ =
        align_up(std::max(block_bytes, min_stride), std::max(block_alignment, alignof(free_block)));
    block_bytes_ = block_bytes;
    first_block_offset_ = align_up(sizeof(chunk_header), block_alignment_);
    if (first_block_offset_ + stride_ > chunk_bytes)
      throw std::invalid_argument("strata: pool block does not fit in a chunk");
    blocks_span_ = (chunk_bytes - first_block_offset_) / stride_ * stride_;
    stride_inverse_ = UINT64_MAX / stride_ + 1;
  }
  basic_fixed_pool(const basic_fixed_pool&) = delete;
  basic_fixed_pool& operator=(const basic_fixed_pool&) = delete;

  // Every chunk goes back to the upstream, live blocks included. A second
  // destructor call aborts; a later allocate finds nothing to pop or carve and
  // aborts in allocate_from_new_chunk(), a later free (checked pools) finds
  // no chunk of the pool's and aborts naming the destroyed pool.
  ~basic_fixed_pool() {
    life_.end("fixed_pool destroyed twice", "fixed_pool::~fixed_pool", this);
    while (chunks_ != nullptr) {
      chunk_header* next = chunks_->next;
      annotate_allocated(chunks_, chunk_bytes_);
      upstream_.deallocate(chunks_, chunk_bytes_, chunk_bytes_);
      chunks_ = next;
    }
    *static_cast<free_block* volatile*>(&free_) = nullptr;
    bump_.store(nullptr, std::memory_order_relaxed);
    bump_end_.store(nullptr, std::memory_order_relaxed);
  }

  // One block: pop the free list, else bump the newest chunk, else a new chunk.
  [[nodiscard]] void* allocate() {
    std::lock_guard guard(lock_);
    ++live_;
    if (free_block* block = free_) [[likely]] {
      free_ = block->next;
      if constexpr (Config.checked) block->tag = 0;
      annotate_allocated(block, block_bytes_);
      return block;
    }
    if (char* block = bump_.load(std::memory_order_relaxed);
        block != bump_end_.load(std::memory_order_relaxed)) {
      bump_.store(block + stride_, std::memory_order_relaxed);
      annotate_allocated(block, block_bytes_);
      return block;
    }
    return allocate_from_new_chunk();
  }

  // Give a block back; in a checked pool, bad input aborts (see pool_config).
  // The free mark is read under the lock: two threads freeing one block at once
  // in a concurrent pool cannot both find it in use.
  void deallocate(void* p) {
    check_address(p, "fixed_pool::deallocate");
    std::lock_guard guard(lock_);
    check_not_free(p, "fixed_pool::deallocate");
    check_handed_out(p, "fixed_pool::deallocate");
    --live_;
    push(p);
  }

  // Fill out[0..count) with separate blocks, under one lock acquisition.
  void allocate_batch(std::size_t count, void** out) {
    std::lock_guard guard(lock_);
    for (std::size_t i = 0; i < count; ++i) {
      if (free_block* block = free_) {
        free_ = block->next;
        if constexpr (Config.checked) block->tag = 0;
        annotate_allocated(block, block_bytes_);
        out[i] = block;
      } else if (char* next = bump_.load(std::memory_order_relaxed);
                 next != bump_end_.load(std::memory_order_relaxed)) {
        out[i] = next;
        bump_.store(next + stride_, std::memory_order_relaxed);
        annotate_allocated(out[i], block_bytes_);
      } else {
        out[i] = allocate_from_new_chunk();
      }
    }
    live_ += count;
  }

  // Give back `count` blocks under one lock acquisition.
  // A bad block aborts before any block of the batch is freed, save for a block
  // listed twice, which aborts when it comes round the second time.
  void deallocate_batch(void* const* blocks, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      check_address(blocks[i], "fixed_pool::deallocate_batch");
    std::lock_guard guard(lock_);
    for (std::size_t i = 0; i < count; ++i) {
      check_handed_out(blocks[i], "fixed_pool::deallocate_batch");
      check_not_free(blocks[i], "fixed_pool::deallocate_batch");
      push(blocks[i]);
    }
    live_ -= count;
  }

  // Abort, in a checked pool, unless `p` is a block of this pool that is in
  // use: reads nothing at `p` before the address is known to be this pool's.
  void check_free(const void* p, const char* where) const noexcept {
    check_address(p, where);
    check_not_free(p, where);
  }

  // Abort, in a checked pool, unless `p` is the start of a block of this pool;
  // reads nothing at `p`.
  void check_address(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked) {
      auto chunk = reinterpret_cast<std::uintptr_t>(p) & ~(chunk_bytes_ - 1);
      if (!chunks_set_.contains(chunk)) [[unlikely]]
        report_not_ours(p, where);
      check_start(p, where);
    }
  }

  // Abort, in a checked pool, if `p` (in a chunk of this pool) is not the start
  // of a block.
  void check_start(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked) {
      std::size_t offset =
          (reinterpret_cast<std::uintptr_t>(p) & (chunk_bytes_ - 1)) - first_block_offset_;
      // offset < 2^32, so offset * (2^64 / stride rounded up) < that value iff
      // stride divides offset: one multiply instead of a division.
      if (offset >= blocks_span_ || offset * stride_inverse_ > stride_inverse_ - 1) [[unlikely]]
        detail::report_misuse("pointer inside a pool block, not at its start, freed", where, p);
    }
  }

  // Give back a block check_free() has passed: for callers
  // that check where the block is freed and push it later, elsewhere. A pool
  // with a lock looks at the free mark again under it: another thread may have
  // freed the block since.
  void deallocate_checked(void* p, const char* where = "fixed_pool::deallocate") {
    std::lock_guard guard(lock_);
    if constexpr (!std::is_same_v<Lock, no_lock>) check_not_free(p, where);
    check_handed_out(p, where);
    --live_;
    push(p);
  }

  // Give back a block its owner frees, in a pool whose blocks another thread
  // may claim at the same time (claim_free()): a block already free or claimed
  // aborts. Plain loads and stores: an owner that races a claim and loses is
  // caught when the claimed block comes back (deallocate_claimed()).
  void deallocate_owned(void* p, const char* where) {
    std::lock_guard guard(lock_);
    check_handed_out(p, where);  // first: a block never carved is poisoned
    if constexpr (Config.checked) {
      const std::uintptr_t mark = std::atomic_ref<std::uintptr_t>(static_cast<free_block*>(p)->tag)
                                      .load(std::memory_order_relaxed);
      if (mark == freed_tag(p) || mark == claimed_tag(p)) [[unlikely]]
        detail::report_misuse("double free of a pool block", where, p);
    }
    --live_;
    push(p);
  }

  // Give back a block claim_free() marked, on its owner's thread; a block whose
  // mark changed since (its owner freed it too) aborts.
  void deallocate_claimed(void* p, const char* where) {
    std::lock_guard guard(lock_);
    check_claimed(p, where);
    check_handed_out(p, where);
    --live_;
    push(p);
  }

  // Abort, in a checked pool, unless the block at `p` still holds the mark
  // claim_free() left (its owner freed it too, or it was freed and reused).
  void check_claimed(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked)
      if (detail::read_metadata_word(&static_cast<const free_block*>(p)->tag) != claimed_tag(p))
          [[unlikely]]
        detail::report_misuse("double free of a pool block", where, p);
  }

  // Mark a checked block as freed by a thread other than its owner, by one
  // atomic exchange of its free mark: of two such threads freeing it at once
  // exactly one wins; the loser (or a block already free) aborts. The owner
  // returns it later with deallocate_claimed().
  void claim_free(void* p, const char* where) noexcept {
    if constexpr (Config.checked) {
      annotate_allocated(static_cast<char*>(p) + sizeof(void*), sizeof(std::uintptr_t));
      std::atomic_ref<std::uintptr_t> tag(static_cast<free_block*>(p)->tag);
      const std::uintptr_t was = tag.exchange(claimed_tag(p), std::memory_order_acq_rel);
      if (was == freed_tag(p) || was == claimed_tag(p)) [[unlikely]]
        detail::report_misuse("double free of a pool block", where, p);
    }
  }

  // A claimed block's first word links it into its claimer's list of blocks to
  // hand back: that word is the free list's link, unused until the block is
  // free again, and the free mark beside it stays put. Relaxed atomics (plain
  // moves): an owner freeing the block at once (a race it loses) writes the word too.
  static void link_claimed(void* p, void* next) noexcept {
    std::atomic_ref<free_block*>(static_cast<free_block*>(p)->next)
        .store(static_cast<free_block*>(next), std::memory_order_relaxed);
  }
  static void* claimed_next(void* p) noexcept {
    return std::atomic_ref<free_block*>(static_cast<free_block*>(p)->next)
        .load(std::memory_order_relaxed);
  }

  // Abort, in a checked pool, if `p` lies in the newest chunk's part not carved
  // yet; a thread that does not own a pool with no lock may call it too, and
  // reads the owner's carving bounds as they were when `p` could last have been
  // handed over (the bounds are atomics, relaxed: plain loads and stores).
  void check_handed_out_remote(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked) {
      char* end = bump_end_.load(std::memory_order_relaxed);
      char* next = bump_.load(std::memory_order_relaxed);
      auto chunk_of = [this](const void* a) {
        return reinterpret_cast<std::uintptr_t>(a) & ~(chunk_bytes_ - 1);
      };
      // A pair read across a chunk change is not trusted; p's chunk must be theirs.
      if (next != end && chunk_of(next) == chunk_of(end - 1) && chunk_of(p) == chunk_of(next) &&
          p >= next && p < end) [[unlikely]]
        detail::report_misuse("pool block that was never allocated freed", where, p);
    }
  }

  // The host-resource face: requests that fit a block, else std::bad_alloc.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    check_alignment(alignment);
    if (bytes > block_bytes_ || alignment > block_alignment_) detail::throw_bad_alloc();
    return allocate();
  }
  void deallocate(void* p, std::size_t, std::size_t) { deallocate(p); }
  bool is_equal(const basic_fixed_pool& other) const noexcept { return this == &other; }

  // The pool a block of some pool of this type came from; `block` must lie in a
  // chunk of such a pool (its header is read).
  static basic_fixed_pool* owner_of(const void* block, std::size_t chunk_bytes) noexcept {
    auto chunk = reinterpret_cast<std::uintptr_t>(block) & ~(chunk_bytes - 1);
    return reinterpret_cast<chunk_header*>(chunk)->owner;
  }

  // Whatever the pool's user attaches to it (the frame allocator: its thread).
  void set_context(void* context) noexcept { context_ = context; }
  void* context() const noexcept { return context_; }

  std::size_t block_bytes() const noexcept { return block_bytes_; }
  std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }
  // This resource's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }
  // Blocks handed out and not given back (read under the pool's own thread).
  std::size_t live_blocks() const noexcept { return live_; }
  std::size_t chunks() const noexcept {
    std::size_t n = 0;
    for (chunk_header* c = chunks_; c != nullptr; c = c->next) ++n;
    return n;
  }

 private:
  struct free_block {
    free_block* next;
    std::uintptr_t tag;  // checked pools: freed_tag() while the block is free
  };
  // A checked pool's blocks hold the tag; an unchecked one's only the link.
  static constexpr std::size_t min_stride = Config.checked ? sizeof(free_block) : sizeof(void*);
  static constexpr std::size_t max_chunk_bytes = std::size_t{1} << 32;
  struct chunk_header {
    basic_fixed_pool* owner;
    chunk_header* next;
  };

  // Called with the lock held: a new chunk, whose first block is returned
  // (none for a destroyed pool).
  [[gnu::noinline]] void* allocate_from_new_chunk() {
    if (!life_.alive()) [[unlikely]]
      detail::report_misuse("use of a destroyed fixed_pool", "fixed_pool::allocate", this);
    auto* chunk = static_cast<chunk_header*>(upstream_.allocate(chunk_bytes_, chunk_bytes_));
    if constexpr (Config.checked) {
      try {
        chunks_set_.insert(reinterpret_cast<std::uintptr_t>(chunk));
      } catch (...) {
        upstream_.deallocate(chunk, chunk_bytes_, chunk_bytes_);
        throw;
      }
    }
    *chunk = {this, chunks_};
    chunks_ = chunk;
    ledger_.took(chunk_bytes_);
    char* first = reinterpret_cast<char*>(chunk) + first_block_offset_;
    std::size_t blocks = (chunk_bytes_ - first_block_offset_) / stride_;
    annotate_released(first, chunk_bytes_ - first_block_offset_);
    bump_.store(first + stride_, std::memory_order_relaxed);
    bump_end_.store(first + blocks * stride_, std::memory_order_relaxed);
    annotate_allocated(first, block_bytes_);
    return first;
  }

  // A pointer in no chunk of this pool, or a call on a destroyed pool.
  [[noreturn, gnu::cold, gnu::noinline]] void report_not_ours(const void* p,
                                                              const char* where) const noexcept {
    if (!life_.alive()) detail::report_misuse("use of a destroyed fixed_pool", where, this);
    detail::report_misuse("block freed into the wrong pool", where, p);
  }

  // What a free block holds in its second word, in a checked pool.
  std::uintptr_t freed_tag(const void* block) const noexcept {
    return reinterpret_cast<std::uintptr_t>(block) ^ secret_;
  }

  // What a block claimed by another thread than its owner holds there.
  std::uintptr_t claimed_tag(const void* block) const noexcept { return ~freed_tag(block); }

  // Abort, in a checked pool, if the block at `p` is free.
  void check_not_free(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked)
      if (detail::read_metadata_word(&static_cast<const free_block*>(p)->tag) == freed_tag(p))
          [[unlikely]]
        detail::report_misuse("double free of a pool block", where, p);
  }

  // Abort, in a checked pool, if `p` lies in the part of the newest chunk not
  // carved yet: a block never handed out. Called with the lock held.
  void check_handed_out(const void* p, const char* where) const noexcept {
    if constexpr (Config.checked)
      if (p >= bump_.load(std::memory_order_relaxed) &&
          p < bump_end_.load(std::memory_order_relaxed)) [[unlikely]]
        detail::report_misuse("pool block that was never allocated freed", where, p);
  }

  // Put a block on the free list (checked pools: tagged as free). Lock held.
  void push(void* p) noexcept {
    auto* block = static_cast<free_block*>(p);
    annotate_allocated(block, min_stride);  // blocks under min_stride: the link spills
    // Relaxed atomic stores (plain moves): claim_free() may exchange the mark at
    // once, and its claimer link the block (link_claimed()).
    std::atomic_ref<free_block*>(block->next).store(free_, std::memory_order_relaxed);
    if constexpr (Config.checked)
      std::atomic_ref<std::uintptr_t>(block->tag).store(freed_tag(p), std::memory_order_relaxed);
    free_ = block;
    annotate_released(reinterpret_cast<char*>(block) + min_stride, stride_ - min_stride);
  }

  // The fast path's state first.
  [[no_unique_address]] Lock lock_;
  free_block* free_ = nullptr;
  // Atomics (relaxed: plain loads and stores) so that a thread that does not own
  // a pool with no lock may read them (check_handed_out_remote).
  std::atomic<char*> bump_{nullptr};
  std::atomic<char*> bump_end_{nullptr};
  std::size_t live_ = 0;
  std::size_t stride_;
  std::size_t block_bytes_;
  chunk_header* chunks_ = nullptr;
  [[no_unique_address]] Upstream upstream_;
  std::size_t chunk_bytes_;
  std::size_t block_alignment_;
  std::size_t first_block_offset_;
  std::size_t blocks_span_;       // bytes of a chunk's blocks, from the first
  std::uint64_t stride_inverse_;  // 2^64 / stride_, rounded up
  void* context_ = nullptr;
  [[no_unique_address]] std::conditional_t<Config.checked, detail::chunk_set, detail::no_chunk_set>
      chunks_set_{detail::log2_of(chunk_bytes_)};
  const std::uintptr_t secret_ = detail::next_free_tag_secret();
  detail::lifetime_word life_;
  ledger_entry ledger_{"fixed_pool", upstream_};
};

// A pool for one thread.
template <host_resource Upstream = malloc_resource, pool_config Config = pool_config{}>
using fixed_pool = basic_fixed_pool<Upstream, no_lock, Config>;

// A pool any thread may allocate from and free into.
template <host_resource Upstream = malloc_resource, pool_config Config = pool_config{}>
using concurrent_fixed_pool = basic_fixed_pool<Upstream, spin_lock, Config>;

// ---- typed pool ------------------------------------------------------------

// A pool of T that constructs on create() and destroys on destroy(). Objects
// still alive when the pool dies are not destroyed: their memory just goes.
template <class T, host_resource Upstream = malloc_resource, class Lock = no_lock,
          pool_config Config = pool_config{}>
class object_pool {
 public:
  explicit object_pool(std::size_t chunk_bytes = 64 * 1024, Upstream upstream = Upstream{})
      : pool_(sizeof(T), alignof(T), chunk_bytes, std::move(upstream)) {}

  // Construct a T in a pooled block; if the constructor throws, the block returns.
  template <class... Args>
  [[nodiscard]] T* create(Args&&... args) {
    void* block = pool_.allocate();
    try {
      return detail::construct_in<T>(block, std::forward<Args>(args)...);
    } catch (...) {
      pool_.deallocate(block);
      throw;
    }
  }

  // Destroy an object of this pool and reuse its block; in a checked pool, a
  // pointer that is not a live object of this pool aborts before its destructor runs.
  void destroy(T* object) {
    if (object == nullptr) return;
    pool_.check_free(object, "object_pool::destroy");
    object->~T();
    pool_.deallocate_checked(object, "object_pool::destroy");
  }

  std::size_t live_objects() const noexcept { return pool_.live_blocks(); }

 private:
  basic_fixed_pool<Upstream, Lock, Config> pool_;
};

}  // namespace strata

#endif  // STRATA_POOL_HPP
