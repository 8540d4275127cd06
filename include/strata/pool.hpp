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

#include <strata/resource.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

namespace strata {

// ---- locks -----------------------------------------------------------------

// The lock of a single-threaded pool: nothing at all.
struct no_lock {
  void lock() noexcept {}
  void unlock() noexcept {}
};

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
        pages_per_refill_(pages_per_refill) {
    if (!is_valid_alignment(page_bytes) || page_bytes < 4096 || pages_per_refill == 0)
      throw std::invalid_argument("strata: slab pages must be a power of two >= 4096 bytes");
    checked_multiply(page_bytes_, pages_per_refill_);
  }
  slab(const slab&) = delete;
  slab& operator=(const slab&) = delete;

  // Every refill goes back to the upstream; pages still in use become invalid.
  ~slab() {
    for (void* group : groups_) {
      annotate_allocated(group, page_bytes_ * pages_per_refill_);
      upstream_.deallocate(group, page_bytes_ * pages_per_refill_, page_bytes_);
    }
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
    --pages_free_;
    return page;
  }

  // Take a page back for the next allocate.
  void deallocate(void* page, std::size_t = 0, std::size_t = default_alignment) {
    std::lock_guard guard(lock_);
    push(page);
  }

  bool is_equal(const slab& other) const noexcept { return this == &other; }
  std::size_t page_bytes() const noexcept { return page_bytes_; }
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
  };

  // One upstream call for pages_per_refill pages.
  void refill() {
    auto* group =
        static_cast<char*>(upstream_.allocate(page_bytes_ * pages_per_refill_, page_bytes_));
    groups_.push_back(group);
    for (std::size_t i = pages_per_refill_; i-- > 0;) push(group + i * page_bytes_);
  }

  void push(void* page) noexcept {
    auto* p = static_cast<free_page*>(page);
    p->next = free_pages_;
    free_pages_ = p;
    ++pages_free_;
    annotate_released(static_cast<char*>(page) + sizeof(free_page),
                      page_bytes_ - sizeof(free_page));
  }

  mutable std::mutex lock_;
  free_page* free_pages_ = nullptr;
  std::size_t pages_free_ = 0;
  std::vector<void*> groups_;
  [[no_unique_address]] Upstream upstream_;
  std::size_t page_bytes_;
  std::size_t pages_per_refill_;
};

// ---- fixed-size pool -------------------------------------------------------

// Compile-time choices of a pool.
struct pool_config {
  bool checked = debug_build;  // check that a freed block belongs to this pool
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
    if (!is_valid_alignment(chunk_bytes))
      throw std::invalid_argument("strata: pool chunk size must be a power of two");
    stride_ = align_up(std::max(block_bytes, sizeof(free_block)),
                       std::max(block_alignment, alignof(free_block)));
    block_bytes_ = block_bytes;
    first_block_offset_ = align_up(sizeof(chunk_header), block_alignment_);
    if (first_block_offset_ + stride_ > chunk_bytes)
      throw std::invalid_argument("strata: pool block does not fit in a chunk");
  }
  basic_fixed_pool(const basic_fixed_pool&) = delete;
  basic_fixed_pool& operator=(const basic_fixed_pool&) = delete;

  // Every chunk goes back to the upstream, live blocks included.
  ~basic_fixed_pool() {
    while (chunks_ != nullptr) {
      chunk_header* next = chunks_->next;
      annotate_allocated(chunks_, chunk_bytes_);
      upstream_.deallocate(chunks_, chunk_bytes_, chunk_bytes_);
      chunks_ = next;
    }
  }

  // One block: pop the free list, else bump the newest chunk, else a new chunk.
  [[nodiscard]] void* allocate() {
    std::lock_guard guard(lock_);
    ++live_;
    if (free_block* block = free_) [[likely]] {
      annotate_allocated(block, block_bytes_);
      free_ = block->next;
      return block;
    }
    if (bump_ != bump_end_) {
      char* block = bump_;
      bump_ += stride_;
      annotate_allocated(block, block_bytes_);
      return block;
    }
    return allocate_from_new_chunk();
  }

  // Give a block back; a block of another pool aborts in a checked pool.
  void deallocate(void* p) {
    if constexpr (Config.checked) check_owner(p, "fixed_pool::deallocate");
    std::lock_guard guard(lock_);
    --live_;
    auto* block = static_cast<free_block*>(p);
    annotate_allocated(block, sizeof(free_block));  // blocks under 8 bytes: the link spills
    block->next = free_;
    free_ = block;
    annotate_released(reinterpret_cast<char*>(block) + sizeof(free_block),
                      stride_ - sizeof(free_block));
  }

  // Fill out[0..count) with separate blocks, under one lock acquisition.
  void allocate_batch(std::size_t count, void** out) {
    std::lock_guard guard(lock_);
    for (std::size_t i = 0; i < count; ++i) {
      if (free_block* block = free_) {
        annotate_allocated(block, block_bytes_);
        free_ = block->next;
        out[i] = block;
      } else if (bump_ != bump_end_) {
        out[i] = bump_;
        bump_ += stride_;
        annotate_allocated(out[i], block_bytes_);
      } else {
        out[i] = allocate_from_new_chunk();
      }
    }
    live_ += count;
  }

  // Give back `count` blocks under one lock acquisition.
  void deallocate_batch(void* const* blocks, std::size_t count) {
    if constexpr (Config.checked)
      for (std::size_t i = 0; i < count; ++i)
        check_owner(blocks[i], "fixed_pool::deallocate_batch");
    std::lock_guard guard(lock_);
    for (std::size_t i = 0; i < count; ++i) {
      auto* block = static_cast<free_block*>(blocks[i]);
      annotate_allocated(block, sizeof(free_block));
      block->next = free_;
      free_ = block;
      annotate_released(reinterpret_cast<char*>(block) + sizeof(free_block),
                        stride_ - sizeof(free_block));
    }
    live_ -= count;
  }

  // The host-resource face: requests that fit a block, else std::bad_alloc.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    check_alignment(alignment);
    if (bytes > block_bytes_ || alignment > block_alignment_) detail::throw_bad_alloc();
    return allocate();
  }
  void deallocate(void* p, std::size_t, std::size_t) { deallocate(p); }
  bool is_equal(const basic_fixed_pool& other) const noexcept { return this == &other; }

  // The pool a block of some pool of this type came from.
  static basic_fixed_pool* owner_of(const void* block, std::size_t chunk_bytes) noexcept {
    auto chunk = reinterpret_cast<std::uintptr_t>(block) & ~(chunk_bytes - 1);
    return reinterpret_cast<chunk_header*>(chunk)->owner;
  }

  // Whatever the pool's user attaches to it (the frame allocator: its thread).
  void set_context(void* context) noexcept { context_ = context; }
  void* context() const noexcept { return context_; }

  std::size_t block_bytes() const noexcept { return block_bytes_; }
  std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }
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
  };
  struct chunk_header {
    basic_fixed_pool* owner;
    chunk_header* next;
  };

  // Called with the lock held: a new chunk, whose first block is returned.
  [[gnu::noinline]] void* allocate_from_new_chunk() {
    auto* chunk = static_cast<chunk_header*>(upstream_.allocate(chunk_bytes_, chunk_bytes_));
    *chunk = {this, chunks_};
    chunks_ = chunk;
    char* first = reinterpret_cast<char*>(chunk) + first_block_offset_;
    std::size_t blocks = (chunk_bytes_ - first_block_offset_) / stride_;
    annotate_released(first, chunk_bytes_ - first_block_offset_);
    bump_ = first + stride_;
    bump_end_ = first + blocks * stride_;
    annotate_allocated(first, block_bytes_);
    return first;
  }

  // Abort unless `p` lies in a chunk of this pool.
  void check_owner(const void* p, const char* where) const {
    if (p == nullptr || owner_of(p, chunk_bytes_) != this) [[unlikely]]
      detail::report_misuse("block freed into the wrong pool", where, p);
  }

  // The fast path's state first.
  [[no_unique_address]] Lock lock_;
  free_block* free_ = nullptr;
  char* bump_ = nullptr;
  char* bump_end_ = nullptr;
  std::size_t live_ = 0;
  std::size_t stride_;
  std::size_t block_bytes_;
  chunk_header* chunks_ = nullptr;
  [[no_unique_address]] Upstream upstream_;
  std::size_t chunk_bytes_;
  std::size_t block_alignment_;
  std::size_t first_block_offset_;
  void* context_ = nullptr;
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

  // Destroy an object of this pool and reuse its block.
  void destroy(T* object) {
    if (object == nullptr) return;
    object->~T();
    pool_.deallocate(object);
  }

  std::size_t live_objects() const noexcept { return pool_.live_blocks(); }

 private:
  basic_fixed_pool<Upstream, Lock, Config> pool_;
};

}  // namespace strata

#endif  // STRATA_POOL_HPP
