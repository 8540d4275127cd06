// strata frame allocator: one monotonic arena per thread, emptied at the end of
// each frame, plus small-object pools for data that outlives a frame.
//
//   strata::frame_allocator<> frames;
//   frames.begin_frame();                         // this thread's frame
//   auto* v = frames.allocate_array<vec3>(800, physics_tag).data();
//   frames.end_frame();                           // everything of the frame goes
//
// Each thread finds its own arena through a thread-local cache keyed by the
// allocator's id: no atomics and no locks on allocation. Arenas grow when full.
// Pool blocks freed by another thread are handed to the owner, which takes
// them back at its next begin_frame().
#ifndef STRATA_FRAME_HPP
#define STRATA_FRAME_HPP

#include <strata/arena.hpp>
#include <strata/pool.hpp>
#include <strata/resource.hpp>

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata {

// A subsystem that frame bytes are attributed to; 0 is "untagged".
using frame_tag = std::uint16_t;
inline constexpr frame_tag untagged = 0;
inline constexpr std::size_t max_frame_tags = 64;

// Run-time choices of a frame allocator.
struct frame_options {
  arena_options arena{.growth = {1024 * 1024, 2, 64 * 1024 * 1024},
                      .default_retention = retention::keep_everything};
  bool double_buffered = false;             // frame data lives until the next frame ends
  std::size_t pool_page_bytes = 64 * 1024;  // slab page: the pools' refill batch
};

// Compile-time choices: minimal mode drops tags, budgets and byte counts.
struct frame_config {
  bool statistics = true;
};

// What one tag did in the frames so far; budgets are per thread and frame.
struct frame_tag_report {
  std::string name;
  std::size_t budget_bytes = 0;      // 0: none
  std::size_t last_frame_bytes = 0;  // summed over threads
  std::size_t peak_frame_bytes = 0;  // the largest frame of any one thread
  std::uint64_t frames_over_budget = 0;
};

// What one thread did in the frames so far.
struct frame_thread_report {
  std::thread::id thread;
  std::uint64_t frames = 0;
  std::size_t last_frame_bytes = 0;
  std::size_t peak_frame_bytes = 0;
  std::size_t reserved_bytes = 0;  // arena chunks held after its last frame
};

struct frame_report {
  std::vector<frame_tag_report> tags;
  std::vector<frame_thread_report> threads;
};

namespace detail {

// The last frame allocator this thread used, its state there, that state's
// active arena (one load less on every allocation), and the untagged bytes of
// its frame so far (counted here, beside the arena, and folded into the state's
// count at end_frame(); parked in the thread's list while another is the last).
struct frame_cache_entry {
  std::uint64_t allocator_id = 0;
  void* state = nullptr;
  void* arena = nullptr;
  std::size_t untagged_bytes = 0;
};
// Constant-initialised, so reaching it needs no guard or wrapper call.
inline constinit thread_local frame_cache_entry last_frame_allocator;
inline thread_local std::vector<frame_cache_entry> frame_allocators_of_thread;
inline std::atomic<std::uint64_t> next_frame_allocator_id{1};

}  // namespace detail

template <host_resource Upstream = malloc_resource, frame_config Config = frame_config{}>
class frame_allocator {
  static constexpr arena_config arena_settings{.statistics = false, .checked = false};
  using slab_type = slab<upstream_ref<Upstream>>;
  using pool_type = fixed_pool<upstream_ref<slab_type>, pool_config{.checked = true}>;

 public:
  using arena_type = monotonic_arena<upstream_ref<Upstream>, arena_settings>;

  // Pool size classes: 16, 32, 64, 128, 256 bytes.
  static constexpr std::size_t max_pooled_bytes = 256;

  explicit frame_allocator(frame_options options = {}, Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)),
        options_(options),
        slab_(options.pool_page_bytes, 16, upstream_ref<Upstream>(upstream_)) {
    tags_.push_back({"untagged", 0, 0, 0, 0});
  }
  frame_allocator(const frame_allocator&) = delete;
  frame_allocator& operator=(const frame_allocator&) = delete;
  ~frame_allocator() = default;

  // ---- frames --------------------------------------------------------------

  // Start a frame on this thread: take back pool blocks other threads freed.
  void begin_frame() { local().take_deferred_frees(); }

  // End this thread's frame: publish its counts, free the frame's memory (with
  // double buffering, the previous frame's).
  void end_frame() {
    detail::frame_cache_entry& mine = cached();
    thread_state& t = *static_cast<thread_state*>(mine.state);
    if constexpr (Config.statistics) {
      t.tag_bytes[untagged] += std::exchange(mine.untagged_bytes, 0);
      publish(t);
    }
    if (options_.double_buffered) {
      t.active = &t.arenas[t.active == &t.arenas[0]];
      mine.arena = t.active;
    }
    t.active->reset();
    ++t.frames;
  }

  // ---- frame memory --------------------------------------------------------

  // Frame memory, freed at end_frame(); bytes are attributed to `tag` once
  // allocated, so a call that throws counts nothing. Inline: one compare of the
  // thread's cache, then the arena's bump (all of minimal mode); with statistics
  // an untagged call adds its bytes in the cache, a tagged one is checked first
  // and counted in the thread's state.
  [[nodiscard, gnu::always_inline]] void* allocate(std::size_t bytes,
                                                   std::size_t alignment = default_alignment,
                                                   frame_tag tag = untagged) {
    if constexpr (Config.statistics) check_tag(tag);
    detail::frame_cache_entry& mine = cached();
    void* block = static_cast<arena_type*>(mine.arena)->allocate(bytes, alignment);
    if constexpr (Config.statistics) {
      if (tag == untagged)
        mine.untagged_bytes += bytes;
      else
        static_cast<thread_state*>(mine.state)->tag_bytes[tag] += bytes;
    }
    return block;
  }

  // The calling thread's arena for this frame, for hot loops: no per-call
  // thread lookup, no tag counting. Valid until this thread's end_frame().
  arena_type& this_thread_arena() { return *static_cast<arena_type*>(cached().arena); }

  // A no-op: frame memory goes at the end of the frame.
  void deallocate(void*, std::size_t, std::size_t = default_alignment) noexcept {}

  // Uninitialised frame storage for `count` objects of T.
  template <class T>
  [[nodiscard]] std::span<T> allocate_array(std::size_t count, frame_tag tag = untagged) {
    std::size_t bytes = checked_multiply(count, sizeof(T));
    return {static_cast<T*>(allocate(bytes, alignof(T), tag)), count};
  }

  // `count` separate frame blocks of `size` bytes in one call.
  void allocate_batch(std::size_t size, std::size_t count, void** out,
                      std::size_t alignment = default_alignment, frame_tag tag = untagged) {
    thread_state& t = local();
    if constexpr (Config.statistics) check_tag(tag);
    std::size_t bytes = checked_multiply(size, count);
    t.active->allocate_batch(size, count, out, alignment);
    if constexpr (Config.statistics) t.tag_bytes[tag] += bytes;
  }

  // ---- pooled small objects ------------------------------------------------

  // A block of up to 256 bytes that lives until pool_deallocate(); larger
  // requests throw std::bad_alloc.
  [[nodiscard]] void* pool_allocate(std::size_t bytes) {
    if (bytes > max_pooled_bytes) detail::throw_bad_alloc();
    return local().pool(size_class(bytes)).allocate();
  }

  // Free a pooled block from any thread; another thread's block waits for its
  // owner's next frame. Null is ignored. A pointer that is no pool block of this
  // allocator (another allocator's, malloc's), a pointer inside a block, and a
  // block freed twice abort: the pages are checked against the allocator's slab
  // before any of the block's memory is read. Another thread's free claims the
  // block's free mark by one atomic exchange (of two such threads freeing one
  // block at once one wins, the other aborts) and hands it over allocating
  // nothing, so it cannot fail; the owner's free stays plain, and
  // an owner freeing a block another thread claimed at the same instant aborts
  // when the claimed block comes back at its next begin_frame().
  void pool_deallocate(void* p) {
    if (p == nullptr) return;
    if (!slab_.in_use(p)) [[unlikely]]
      detail::report_misuse("block freed into the wrong frame allocator",
                            "frame_allocator::pool_deallocate", p);
    pool_type* pool = pool_type::owner_of(p, options_.pool_page_bytes);
    auto* owner = static_cast<thread_state*>(pool->context());
    const detail::frame_cache_entry& last = detail::last_frame_allocator;
    if (last.allocator_id != id_ || last.state != owner) [[unlikely]]
      return pool_deallocate_uncached(pool, owner, p);
    pool_deallocate_owned(pool, p);
  }

  // ---- tags and report -----------------------------------------------------

  // A new tag; `budget_bytes` (0: none) is per thread and per frame.
  frame_tag register_tag(std::string name, std::size_t budget_bytes = 0) {
    std::lock_guard guard(lock_);
    if (tags_.size() == max_frame_tags)
      throw std::length_error("strata: a frame allocator holds at most 64 tags");
    tags_.push_back({std::move(name), budget_bytes, 0, 0, 0});
    budgets_[tags_.size() - 1].store(budget_bytes, std::memory_order_relaxed);
    tag_count_.store(static_cast<frame_tag>(tags_.size()), std::memory_order_release);
    return static_cast<frame_tag>(tags_.size() - 1);
  }

  // Bytes and peaks per tag and per thread, as of each thread's last end_frame().
  frame_report report() const {
    std::lock_guard guard(lock_);
    frame_report r;
    r.tags = tags_;
    for (const auto& t : states_) {
      std::lock_guard published_guard(t->published_lock);
      r.threads.push_back(t->published);
      for (std::size_t tag = 0; tag < r.tags.size(); ++tag) {
        r.tags[tag].last_frame_bytes += t->tag_last[tag];
        r.tags[tag].peak_frame_bytes = std::max(r.tags[tag].peak_frame_bytes, t->tag_peak[tag]);
        r.tags[tag].frames_over_budget += t->tag_over_budget[tag];
      }
    }
    return r;
  }

  bool is_equal(const frame_allocator& other) const noexcept { return this == &other; }

 private:
  // One thread's arenas, pools and counters, on cache lines of its own.
  struct alignas(64) thread_state {
    thread_state(frame_allocator& owner, const frame_options& options, Upstream& upstream)
        : allocator(&owner),
          arenas{arena_type(options.arena, upstream_ref<Upstream>(upstream)),
                 arena_type(options.arena, upstream_ref<Upstream>(upstream))} {
      published.thread = std::this_thread::get_id();
    }

    // The pool of a size class, set up on first use.
    pool_type& pool(std::size_t size_class) {
      std::optional<pool_type>& p = pools[size_class];
      if (!p) [[unlikely]] {
        p.emplace(std::size_t{16} << size_class,
                  std::size_t{16} << std::min<std::size_t>(size_class, 2),
                  allocator->options_.pool_page_bytes, upstream_ref<slab_type>(allocator->slab_));
        p->set_context(this);
      }
      return *p;
    }

    // Called by another thread: hand a claimed block to this thread's next
    // frame, linked through its own first word (see fixed_pool::link_claimed):
    // no allocation, so a free from another thread cannot fail.
    void defer(void* p) noexcept {
      std::lock_guard guard(deferred_lock);
      pool_type::link_claimed(p, deferred);
      deferred = p;
      has_deferred.store(true, std::memory_order_release);
    }

    // Return every block other threads handed over to its pool; each block's
    // mark is checked before its link is followed, so a block its owner freed
    // too aborts before the list is read past it.
    void take_deferred_frees() {
      if (!has_deferred.load(std::memory_order_acquire)) return;
      void* taking = nullptr;
      {
        std::lock_guard guard(deferred_lock);
        taking = std::exchange(deferred, nullptr);
        has_deferred.store(false, std::memory_order_relaxed);
      }
      while (taking != nullptr) {
        void* p = taking;
        pool_type* pool = pool_type::owner_of(p, allocator->options_.pool_page_bytes);
        pool->check_claimed(p, "frame_allocator::pool_deallocate, found by begin_frame");
        taking = pool_type::claimed_next(p);
        pool->deallocate_claimed(p, "frame_allocator::pool_deallocate, found by begin_frame");
      }
    }

    frame_allocator* allocator;
    arena_type* active = &arenas[0];  // this frame's arena
    std::uint64_t frames = 0;
    arena_type arenas[2];
    std::array<std::size_t, max_frame_tags> tag_bytes{};  // this frame
    std::array<std::optional<pool_type>, 5> pools;
    alignas(64) std::atomic<bool> has_deferred{false};
    std::mutex deferred_lock;
    void* deferred = nullptr;  // claimed blocks other threads handed over, linked
    // Published at end_frame() under this thread's own lock, which only report()
    // takes besides: threads ending frames at once do not wait on each other.
    std::mutex published_lock;
    frame_thread_report published;
    std::array<std::size_t, max_frame_tags> tag_last{};
    std::array<std::size_t, max_frame_tags> tag_peak{};
    std::array<std::uint64_t, max_frame_tags> tag_over_budget{};
  };

  // The thread-local cache, made to hold this allocator's entry: one compare
  // when it already does.
  [[gnu::always_inline]] detail::frame_cache_entry& cached() {
    detail::frame_cache_entry& last = detail::last_frame_allocator;
    if (last.allocator_id != id_) [[unlikely]]
      local_slow();
    return last;
  }

  // This thread's state.
  thread_state& local() { return *static_cast<thread_state*>(cached().state); }

  // Look the state up among this thread's allocators, or make one; either way
  // it becomes the thread's last. The last one's untagged count is parked in
  // its entry of the list (thread-local memory, valid even if that allocator is
  // gone), and this one's taken from there.
  [[gnu::noinline]] thread_state& local_slow() {
    auto& mine = detail::frame_allocators_of_thread;
    detail::frame_cache_entry& last = detail::last_frame_allocator;
    detail::frame_cache_entry* found = nullptr;
    for (detail::frame_cache_entry& entry : mine) {
      if (entry.allocator_id == last.allocator_id) entry.untagged_bytes = last.untagged_bytes;
      if (entry.allocator_id == id_) found = &entry;
    }
    if (found == nullptr) {
      auto state = std::make_unique<thread_state>(*this, options_, upstream_);
      thread_state* raw = state.get();
      {
        std::lock_guard guard(lock_);
        states_.push_back(std::move(state));
      }
      mine.push_back({id_, raw, nullptr, 0});
      found = &mine.back();
    }
    auto* state = static_cast<thread_state*>(found->state);
    found->arena = state->active;
    last = *found;
    return *state;
  }

  // The owner's free: plain, the pool's own checks.
  [[gnu::always_inline]] static void pool_deallocate_owned(pool_type* pool, void* p) {
    constexpr const char* where = "frame_allocator::pool_deallocate";
    pool->check_start(p, where);
    pool->deallocate_owned(p, where);
  }

  // A free on a thread whose cache holds another allocator or another state:
  // the owner's free if this thread owns the block, else another thread's.
  // Looked up without making this thread a state, so that free never allocates.
  [[gnu::noinline]] void pool_deallocate_uncached(pool_type* pool, thread_state* owner, void* p) {
    for (const detail::frame_cache_entry& entry : detail::frame_allocators_of_thread)
      if (entry.allocator_id == id_ && entry.state == owner) return pool_deallocate_owned(pool, p);
    pool_deallocate_remote(pool, owner, p);
  }

  // Another thread's block: checked to have been handed out, its free mark
  // claimed by one atomic exchange (of two threads claiming it at once one
  // wins, the other aborts), then handed to the owner's next frame.
  [[gnu::noinline]] static void pool_deallocate_remote(pool_type* pool, thread_state* owner,
                                                       void* p) {
    constexpr const char* where = "frame_allocator::pool_deallocate";
    pool->check_start(p, where);
    pool->check_handed_out_remote(p, where);
    pool->claim_free(p, where);
    owner->defer(p);
  }

  // Pool size class of a request: 0 for up to 16 bytes, 4 for up to 256.
  static std::size_t size_class(std::size_t bytes) noexcept {
    return bytes <= 16 ? 0 : static_cast<std::size_t>(std::bit_width(bytes - 1)) - 4;
  }

  // Throw std::invalid_argument for a tag this allocator never registered: its
  // bytes would be counted where report() never looks. Untagged (a constant in
  // most calls) costs nothing; another tag one load (beside id_, which every
  // allocation reads) and one compare.
  [[gnu::always_inline]] void check_tag(frame_tag tag) const {
    if (tag != untagged && tag >= tag_count_.load(std::memory_order_relaxed)) [[unlikely]]
      throw_bad_tag(tag);
  }

  [[noreturn]] [[gnu::cold, gnu::noinline]] static void throw_bad_tag(frame_tag tag) {
    throw std::invalid_argument("strata: frame tag " + std::to_string(tag) +
                                " was never registered (frame_allocator::register_tag)");
  }

  // Fold this thread's frame into its published report, and start a new count.
  // The budgets of the tags registered so far are read without the allocator's lock.
  void publish(thread_state& t) {
    const std::size_t tags = tag_count_.load(std::memory_order_acquire);
    std::lock_guard guard(t.published_lock);
    std::size_t frame_bytes = 0;
    for (std::size_t tag = 0; tag < tags; ++tag) {
      std::size_t bytes = std::exchange(t.tag_bytes[tag], 0);
      std::size_t budget = budgets_[tag].load(std::memory_order_relaxed);
      frame_bytes += bytes;
      t.tag_last[tag] = bytes;
      t.tag_peak[tag] = std::max(t.tag_peak[tag], bytes);
      if (budget != 0 && bytes > budget) ++t.tag_over_budget[tag];
    }
    t.published.frames = t.frames + 1;
    t.published.last_frame_bytes = frame_bytes;
    t.published.peak_frame_bytes = std::max(t.published.peak_frame_bytes, frame_bytes);
    t.published.reserved_bytes = t.arenas[0].bytes_reserved() + t.arenas[1].bytes_reserved();
  }

  const std::uint64_t id_ = detail::next_frame_allocator_id.fetch_add(1);
  std::atomic<frame_tag> tag_count_{1};  // tags registered, "untagged" included
  std::array<std::atomic<std::size_t>, max_frame_tags> budgets_{};  // each tag's, for publish()
  Upstream upstream_;
  frame_options options_;
  slab_type slab_;
  mutable std::mutex lock_;
  std::vector<frame_tag_report> tags_;
  std::vector<std::unique_ptr<thread_state>> states_;
};

}  // namespace strata

#endif  // STRATA_FRAME_HPP
