// The tracking adaptor: the live allocations of any host resource, for leak
// reports and debugging.
//
// Two modes, chosen when the adaptor is made (tracking_options):
// - exact (the default, sample_bytes = 0): every block is recorded, and freeing
//   a block the adaptor does not know (a double free, a foreign pointer, on
//   any thread) prints one line and aborts before the upstream sees it.
// - sampled (tracking_options{.sample_bytes = N}): about one block per N bytes
//   allocated is recorded, drawn as tcmalloc and jemalloc profile (a Poisson
//   process over the bytes, detail/poisson_sampler.hpp: a per-thread countdown
//   of bytes on the hot path), and each record carries its weight (1/p for a
//   block drawn with probability p), so live() and leak_report() estimate the
//   live blocks and bytes without bias. The counters stay exact. What is lost:
//   the blocks that are not drawn have no record (no tag, stack or age of
//   theirs is kept), and a double or foreign free of such a block is not
//   caught by the adaptor (it reaches the upstream, whose own checks apply; a
//   free the upstream refuses by throwing is not counted).
//   A free looks at a filter keyed by an address hash (detail/sample_filter.hpp)
//   before it touches the records: a block never drawn almost always finds none.
//
// Counters, exact in both modes and lock-free on a thread's own calls:
// live_blocks(), live_bytes(), total_allocations(), total_bytes(). Each thread
// counts in a shard of its own (detail/tracking_shard.hpp); a block freed on
// another thread is counted out there; readers sum the shards.
//
// A record holds the size, the alignment, when (coarse monotonic clock),
// which thread (strata::thread_number()) and a caller tag: the tag given to
// allocate_tagged(), else the calling thread's current tag (set with a
// `tracking_tag` guard), else none. With StackDepth > 0 it also captures that
// many return addresses with backtrace() into a fixed array per record.
// leak_report() lists every record as text.
//
// The records live in open-addressing hash tables keyed by address
// (address_table.hpp), never inside the blocks, so the upstream may hand out
// memory the host cannot touch (device memory). In exact mode each thread that
// calls the adaptor records into its shard's table, under a one-flag lock
// only that thread takes on its calls, so a call costs one uncontended
// exchange and no shared cache line; a block freed by a thread that did not
// allocate it is looked for in the other shards on a cold path, under the
// registry lock (Lock: std::mutex by default). Sampled records, rare by
// design, share one table under a one-flag lock held for one insert or erase
// (none under no_lock). With Lock =
// strata::no_lock (one thread at a time) there is one shard for all, taken
// without a lock. A shard whose thread exited keeps its records and counts (a
// new thread adopts it). Time stamps come from the coarse monotonic clock,
// which a thread reads once every 16 of its records (a record carries the
// time of the read at most 15 of its thread's records before it, so a block
// of a thread that allocates rarely may look older than it is): enough to age
// a leak (the kernel tick, a few ms), not to time a call; within a thread a
// sequence number orders blocks, between threads the clock does. Freeing null
// does nothing.
//
// The off switch: tracking<Upstream, false> (the default when the program is
// compiled with STRATA_TRACKING=0) is a pure pass-through holding only the
// upstream: same size, every call inlines to the upstream's, no map, no clock.
#ifndef STRATA_TRACKING_HPP
#define STRATA_TRACKING_HPP

#include <strata/address_table.hpp>
#include <strata/detail/poisson_sampler.hpp>
#include <strata/detail/sample_filter.hpp>
#include <strata/detail/tracking_shard.hpp>
#include <strata/no_lock.hpp>
#include <strata/resource.hpp>
#include <strata/synchronized.hpp>
#include <strata/thread_number.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef STRATA_TRACKING
#define STRATA_TRACKING 1
#endif

namespace strata {

// Whether tracking<Upstream> tracks when its second argument is not given.
inline constexpr bool tracking_by_default = STRATA_TRACKING != 0;

namespace detail {

// Fill `frames` with up to `depth` return addresses of the caller's stack,
// skipping `skip` innermost frames; returns how many were stored.
__attribute__((visibility("default"))) std::size_t capture_stack(void** frames, std::size_t depth,
                                                                 std::size_t skip) noexcept;

// Append one line per frame ("    #i address symbol") to `out`.
__attribute__((visibility("default"))) void describe_stack(void* const* frames, std::size_t count,
                                                           std::string& out);

// The calling thread's current caller tag (null: none).
inline thread_local const char* current_tracking_tag = nullptr;

}  // namespace detail

// Sets the calling thread's caller tag for the guard's lifetime; guards nest.
// The tag must be a string that outlives every record made under it (a literal).
class tracking_tag {
 public:
  explicit tracking_tag(const char* tag) noexcept : previous_(detail::current_tracking_tag) {
    detail::current_tracking_tag = tag;
  }
  tracking_tag(const tracking_tag&) = delete;
  tracking_tag& operator=(const tracking_tag&) = delete;
  ~tracking_tag() { detail::current_tracking_tag = previous_; }

 private:
  const char* previous_;
};

// How a tracking adaptor records: the constructor's last argument.
struct tracking_options {
  // 0 (the default): exact, every block recorded, unknown frees abort. N > 0:
  // sampled, about one block recorded per N bytes allocated.
  std::size_t sample_bytes = 0;
  // The sampler's seed (sampled mode): 0 takes one from the clock; a fixed one
  // draws the same blocks for the same calls, thread by thread.
  std::uint64_t seed = 0;
};

// One live allocation as the tracking adaptor saw it.
template <std::size_t StackDepth>
struct tracked_block {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::size_t alignment = 0;
  std::int64_t time_ns = 0;  // coarse monotonic clock, since the adaptor was made
  std::uint32_t thread = 0;  // strata::thread_number() of the allocating thread (saturates
                             // at 65,535)
  std::uint32_t depth = 0;   // frames captured
  const char* tag = nullptr;
  double weight = 1;  // blocks this record stands for (bytes * weight bytes): 1 when exact
  std::array<void*, StackDepth> frames{};
};

template <host_resource Upstream, bool Enabled = tracking_by_default, std::size_t StackDepth = 0,
          class Lock = std::mutex>
class tracking;

// The off switch: the upstream and nothing else.
template <host_resource Upstream, std::size_t StackDepth, class Lock>
class tracking<Upstream, false, StackDepth, Lock> {
 public:
  static constexpr bool enabled = false;

  tracking() requires std::default_initializable<Upstream>
  = default;
  // The options are accepted and ignored, so code builds both ways.
  explicit tracking(tracking_options) requires std::default_initializable<Upstream> {}
  explicit tracking(Upstream upstream, tracking_options = {}) : upstream_(std::move(upstream)) {}

  // Straight to the upstream.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return upstream_.allocate(bytes, alignment);
  }
  // Straight to the upstream; the tag is ignored.
  void* allocate_tagged(std::size_t bytes, std::size_t alignment, const char*) {
    return upstream_.allocate(bytes, alignment);
  }
  // Straight to the upstream.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    upstream_.deallocate(p, bytes, alignment);
  }
  bool is_equal(const tracking& other) const noexcept {
    return upstream_.is_equal(other.upstream_);
  }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  std::size_t live_blocks() const noexcept { return 0; }
  std::size_t live_bytes() const noexcept { return 0; }
  std::uint64_t total_allocations() const noexcept { return 0; }
  std::uint64_t total_bytes() const noexcept { return 0; }
  std::size_t sample_bytes() const noexcept { return 0; }
  // Says that tracking is compiled out.
  std::string leak_report() const { return "strata tracking: compiled out\n"; }

  Upstream& upstream() noexcept { return upstream_; }

 private:
  [[no_unique_address]] Upstream upstream_{};
};

template <host_resource Upstream, std::size_t StackDepth, class Lock>
class tracking<Upstream, true, StackDepth, Lock> {
 public:
  static constexpr bool enabled = true;
  using block = tracked_block<StackDepth>;

  tracking() requires std::default_initializable<Upstream> { start({}); }
  explicit tracking(tracking_options options) requires std::default_initializable<Upstream> {
    start(options);
  }
  explicit tracking(Upstream upstream, tracking_options options = {})
      : upstream_(std::move(upstream)) {
    start(options);
  }
  tracking(const tracking&) = delete;
  tracking& operator=(const tracking&) = delete;
  // Tell the threads that hold shards of this adaptor to forget them.
  ~tracking() {
    for (auto& s : shards_) s->orphaned.store(true, std::memory_order_release);
  }

  // Allocate and record the block under the thread's current tag (read only
  // when a record is made).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_with(bytes, alignment, [] { return detail::current_tracking_tag; });
  }

  // Allocate and record the block under `tag` (a string that outlives the record).
  void* allocate_tagged(std::size_t bytes, std::size_t alignment, const char* tag) {
    return allocate_with(bytes, alignment, [tag] { return tag; });
  }

  // Forget the block, then return it; a null pointer is ignored. Exact: a
  // block never handed out aborts, and one of another thread's shard is looked
  // for there, on a cold path. Sampled: the records are looked at only when
  // the block's filter says it may be a sample, and the free is counted once
  // the upstream took the block, so a free it refuses (throws) counts nothing.
  // The caller's size (the one the upstream gets too) keeps the counts, so no
  // record is read back.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    if (sample_bytes_ == 0) [[unlikely]] {
      forget_exact(this_thread_shard(), p, bytes);
      upstream_.deallocate(p, bytes, alignment);
      return;
    }
    // The record goes first: once the upstream has the block, another thread
    // may be handed it and record it.
    if (filter_->may_hold(p)) [[unlikely]]
      forget_sample(p);
    upstream_.deallocate(p, bytes, alignment);
    shard& s = this_thread_shard();
    if (s.lockless) [[likely]] {
      s.count_free(bytes);
    } else {
      shard_guard lock(s.lock);
      s.count_free(bytes);
    }
  }

  bool is_equal(const tracking& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // Blocks live, exact in both modes: every shard's allocations less its frees
  // (while other threads call, a passing value, never below zero).
  std::size_t live_blocks() const {
    return difference(&detail::shard_counters::allocations, &detail::shard_counters::frees);
  }
  // Bytes live, exact in both modes (as live_blocks()).
  std::size_t live_bytes() const {
    return difference(&detail::shard_counters::allocated_bytes,
                      &detail::shard_counters::freed_bytes);
  }
  // Blocks handed out since the adaptor was made.
  std::uint64_t total_allocations() const { return sum(&detail::shard_counters::allocations); }
  // Bytes handed out since the adaptor was made.
  std::uint64_t total_bytes() const { return sum(&detail::shard_counters::allocated_bytes); }
  // The mean bytes between samples; 0 when exact.
  std::size_t sample_bytes() const noexcept { return sample_bytes_; }

  // Every recorded live block, oldest first: in allocation order within a
  // thread, by the coarse clock between threads. Exact: every live block,
  // weight 1. Sampled: the drawn ones, each with its weight.
  std::vector<block> live() const {
    std::vector<std::pair<std::pair<std::int64_t, std::uint64_t>, block>> ordered;
    const auto add = [&](std::uintptr_t address, const record& r) {
      block b;
      b.address = address;
      b.bytes = r.bytes;
      b.alignment = std::size_t{1} << (r.order & 0xff);
      b.time_ns = r.time_ns;
      b.thread = static_cast<std::uint32_t>(r.order >> 8 & 0xffff);
      b.tag = r.tag;
      if (sample_bytes_ != 0)
        b.weight = detail::poisson_weight(r.bytes, static_cast<double>(sample_bytes_)).count;
      if constexpr (StackDepth > 0) {
        b.frames = r.frames;
        while (b.depth < StackDepth && b.frames[b.depth] != nullptr) ++b.depth;
      }
      ordered.emplace_back(std::pair(r.time_ns, r.order >> 24), b);
    };
    if (sample_bytes_ == 0) {
      for_each_shard([&](const shard& s) { s.live.for_each(add); });
    } else {
      std::lock_guard lock(samples_lock_);
      samples_.for_each(add);
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<block> out;
    out.reserve(ordered.size());
    for (const auto& entry : ordered) out.push_back(entry.second);
    return out;
  }

  // A text report: a summary line, then one line per record (oldest first)
  // with its address, size, alignment, thread, tag and age (and weight when
  // sampled), and its stack. Sampled, the summary gives the exact counts and
  // the records' estimate of them.
  std::string leak_report() const {
    const std::int64_t now = clock_ns() - start_;
    const std::vector<block> blocks = live();
    std::string out;
    char line[256];
    if (sample_bytes_ == 0) {
      std::size_t bytes = 0;
      for (const block& b : blocks) bytes += b.bytes;
      std::snprintf(line, sizeof line, "strata tracking: %zu live blocks, %zu bytes\n",
                    blocks.size(), bytes);
    } else {
      double count = 0, bytes = 0;
      for (const block& b : blocks) {
        count += b.weight;
        bytes += b.weight * static_cast<double>(b.bytes);
      }
      std::snprintf(line, sizeof line,
                    "strata tracking: %zu live blocks, %zu bytes; sampled 1 per %zu bytes: %zu "
                    "records, estimated %.0f blocks, %.0f bytes\n",
                    live_blocks(), live_bytes(), sample_bytes_, blocks.size(), count, bytes);
    }
    out += line;
    for (const block& b : blocks) {
      std::snprintf(line, sizeof line,
                    "  0x%" PRIxPTR " %zu bytes align %zu thread %" PRIu32 " tag %s age %.3f ms",
                    b.address, b.bytes, b.alignment, b.thread, b.tag != nullptr ? b.tag : "-",
                    static_cast<double>(now - b.time_ns) / 1e6);
      out += line;
      if (sample_bytes_ != 0) {
        std::snprintf(line, sizeof line, " weight %.2f", b.weight);
        out += line;
      }
      out += '\n';
      if constexpr (StackDepth > 0) detail::describe_stack(b.frames.data(), b.depth, out);
    }
    return out;
  }

  Upstream& upstream() noexcept { return upstream_; }

 private:
  // What the table keeps per block (its address is the key).
  struct no_frames {};
  using frames_type =
      std::conditional_t<(StackDepth > 0), std::array<void*, StackDepth>, no_frames>;

  // 32 bytes without a stack, so a record never straddles a cache line.
  struct record {
    std::size_t bytes = 0;
    const char* tag = nullptr;
    std::int64_t time_ns = 0;
    std::uint64_t order = 0;  // sequence << 24 | thread (16 bits) << 8 | log2(alignment)
    [[no_unique_address]] frames_type frames{};
  };
  static_assert(StackDepth > 0 || sizeof(record) == 32);

  // With Lock = no_lock one thread at a time calls: one shard, taken without a lock.
  static constexpr bool one_thread = std::is_same_v<Lock, no_lock>;
  struct no_guard {
    explicit no_guard(detail::shard_lock&) noexcept {}
  };
  using shard_guard = std::conditional_t<one_thread, no_guard, std::lock_guard<detail::shard_lock>>;

  // One thread's records, counts and sampler, and the clock it reads once
  // every clock_every records.
  struct shard : detail::tracking_shard<record> {
    static constexpr std::uint32_t clock_every = 16;
    std::int64_t clock = 0;
    std::uint32_t until_clock = 0;
    // The coarse clock since `start`, read afresh every clock_every records:
    // the clock's tick (a few ms) is coarser than 16 calls on a busy thread.
    std::int64_t now_ns(std::int64_t start) noexcept {
      if (until_clock-- == 0) [[unlikely]] {
        clock = clock_ns() - start;
        until_clock = clock_every - 1;
      }
      return clock;
    }
  };

  // Allocate, count and record the block (every one when exact, when drawn
  // when sampled) under the tag `tag()` gives, in the calling thread's shard:
  // exact takes its uncontended lock, sampled no lock. The sampled path is laid
  // out first: it is the mode meant to stay on in production.
  template <class Tag>
  void* allocate_with(std::size_t bytes, std::size_t alignment, Tag tag) {
    void* p = upstream_.allocate(bytes, alignment);
    shard& s = this_thread_shard();
    if (s.lockless) [[likely]] {
      count_sampled(s, p, bytes, alignment, tag);
    } else if (sample_bytes_ == 0) {
      record_exact(s, p, bytes, alignment, tag);
    } else {
      shard_guard lock(s.lock);
      count_sampled(s, p, bytes, alignment, tag);
    }
    return p;
  }

  // Exact mode: record the block in the thread's shard and count it; a
  // record that cannot be made gives the block back and throws.
  template <class Tag>
  void record_exact(shard& s, void* p, std::size_t bytes, std::size_t alignment, Tag tag) {
    record r;
    r.bytes = bytes;
    r.tag = tag();
    const std::uint32_t thread = thread_number();
    if constexpr (StackDepth > 0) detail::capture_stack(r.frames.data(), StackDepth, 1);
    try {
      shard_guard lock(s.lock);
      r.time_ns = s.now_ns(start_);
      r.order = pack_order(s.next_sequence++, thread, alignment);
      s.live.insert(reinterpret_cast<std::uintptr_t>(p), r);
      s.count_allocation(bytes);
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
  }

  // Exact mode: count the block out and forget its record, found in the
  // caller's shard or, on a cold path, another's; none aborts.
  void forget_exact(shard& s, void* p, std::size_t bytes) {
    bool found;
    {
      shard_guard lock(s.lock);
      found = s.live.erase(reinterpret_cast<std::uintptr_t>(p), nullptr);
      s.count_free(bytes);
    }
    if (!found) [[unlikely]]
      forget_elsewhere(p, &s);
  }

  // Sampled mode: count the block, and record it when the thread's byte
  // countdown runs out on it (before counting, so a failed record counts none).
  template <class Tag>
  void count_sampled(shard& s, void* p, std::size_t bytes, std::size_t alignment, Tag tag) {
    s.bytes_left -= static_cast<long>(bytes);
    if (s.bytes_left < 0) [[unlikely]]
      record_sample(s, p, bytes, alignment, tag);
    s.count_allocation(bytes);
  }

  // The countdown ran out: draw the next gap, record the block in the sample
  // table and mark it in the filter; a record that cannot be made gives the
  // block back and throws.
  template <class Tag>
  [[gnu::cold, gnu::noinline]] void record_sample(shard& s, void* p, std::size_t bytes,
                                                  std::size_t alignment, Tag tag) {
    s.bytes_left =
        detail::poisson_gap(detail::sampler_next(s.random), static_cast<double>(sample_bytes_));
    record r;
    r.bytes = bytes;
    r.tag = tag();
    if constexpr (StackDepth > 0) detail::capture_stack(r.frames.data(), StackDepth, 1);
    r.time_ns = s.now_ns(start_);
    r.order = pack_order(s.next_sequence++, thread_number(), alignment);
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    try {
      std::lock_guard lock(samples_lock_);
      samples_.insert(address, r);
      filter_->add(p);
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
  }

  // Sampled mode: the block's filter bit is set, so it may be a sample: forget
  // its record and its mark in the filter; no record is a block not drawn.
  [[gnu::cold, gnu::noinline]] void forget_sample(void* p) {
    std::lock_guard lock(samples_lock_);
    if (samples_.erase(reinterpret_cast<std::uintptr_t>(p), nullptr)) filter_->remove(p);
  }

  // The calling thread's shard: one shard for all under no_lock (one thread at
  // a time), else the thread's own, found through the thread-local cache.
  shard& this_thread_shard() {
    if constexpr (one_thread) {
      return *common_;
    } else {
      const detail::last_shard& last = detail::this_thread_last_shard;
      if (last.id == id_) [[likely]]
        return *static_cast<shard*>(last.shard);
      return find_shard();
    }
  }

  // The slow path of this_thread_shard(): the thread's list, else an abandoned
  // shard adopted or a new one; once the thread's list is gone, the common one.
  [[gnu::noinline]] shard& find_shard() {
    if (detail::thread_shards::exited) return *common_;
    detail::thread_shards& held = detail::this_thread_shards();
    auto* found = static_cast<shard*>(held.find(id_));
    if (found == nullptr) {
      std::shared_ptr<shard> chosen;
      {
        std::lock_guard lock(registry_lock_);
        for (const auto& s : shards_) {
          bool abandoned = true;
          if (s->abandoned.compare_exchange_strong(abandoned, false, std::memory_order_acquire)) {
            chosen = s;
            break;
          }
        }
        if (!chosen) chosen = new_shard();
      }
      held.hold(id_, chosen);
      found = chosen.get();
    }
    detail::this_thread_last_shard = {id_, found};
    return *found;
  }

  // A new shard, its sampler seeded from the adaptor's seed and its place
  // among the shards, and its first gap drawn (under the registry lock).
  std::shared_ptr<shard> new_shard() {
    auto made = std::make_shared<shard>();
    made->lockless = sample_bytes_ != 0;
    made->random = detail::sampler_state(seed_ + shards_.size() * 0x9e3779b97f4a7c15ull);
    if (sample_bytes_ != 0)
      made->bytes_left = detail::poisson_gap(detail::sampler_next(made->random),
                                             static_cast<double>(sample_bytes_));
    shards_.push_back(made);
    return made;
  }

  // Exact mode: forget a block missing from the caller's shard: it is in
  // another thread's shard (freed by a thread that did not allocate it), or it
  // is not live and the free is reported before the upstream sees it.
  [[gnu::cold, gnu::noinline]] void forget_elsewhere(void* p, const shard* mine) {
    bool found = false;
    {
      std::lock_guard lock(registry_lock_);
      for (const auto& s : shards_) {
        if (s.get() == mine) continue;
        shard_guard shard_lock(s->lock);
        found = s->live.erase(reinterpret_cast<std::uintptr_t>(p), nullptr);
        if (found) break;
      }
    }
    if (!found)
      detail::report_misuse("free of a block not live in this tracking adaptor",
                            "strata::tracking::deallocate", p);
  }

  // Call `f(shard)` for every shard, each under its lock.
  template <class F>
  void for_each_shard(F&& f) const {
    std::lock_guard lock(registry_lock_);
    for (const auto& s : shards_) {
      shard_guard shard_lock(s->lock);
      f(*s);
    }
  }

  // One counter summed over every shard.
  using counter = std::atomic<std::uint64_t> detail::shard_counters::*;
  std::uint64_t sum(counter c) const {
    std::uint64_t total = 0;
    std::lock_guard lock(registry_lock_);
    for (const auto& s : shards_) total += ((*s).*c).load(std::memory_order_relaxed);
    return total;
  }

  // Counter `in` less counter `out`, summed over every shard in one pass; a
  // block counted out on one shard after another counted it in reads as
  // negative while threads run, so the result stops at zero.
  std::size_t difference(counter in, counter out) const {
    std::int64_t total = 0;
    std::lock_guard lock(registry_lock_);
    for (const auto& s : shards_)
      total += static_cast<std::int64_t>(((*s).*in).load(std::memory_order_relaxed) -
                                         ((*s).*out).load(std::memory_order_relaxed));
    return total > 0 ? static_cast<std::size_t>(total) : 0;
  }

  // Pack the sequence number, the thread (saturated at 16 bits) and the alignment.
  static std::uint64_t pack_order(std::uint64_t sequence, std::uint32_t thread,
                                  std::size_t alignment) noexcept {
    const std::uint64_t small_thread = thread < 0xffff ? thread : 0xffff;
    return sequence << 24 | small_thread << 8 |
           static_cast<std::uint64_t>(std::countr_zero(alignment));
  }

  // The coarse monotonic clock in nanoseconds: a few ns per read (the precise
  // clock and the cycle counter cost 3-9 times more under virtualisation), with
  // the kernel tick's resolution.
  static std::int64_t clock_ns() noexcept {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  }

  // Take the start time, the mode, the sampler's seed and filter, and the
  // common shard (shared by exiting threads, so counted under its lock,
  // unless one thread at a time calls).
  void start(tracking_options options) {
    start_ = clock_ns();
    sample_bytes_ = options.sample_bytes;
    seed_ = options.seed != 0 ? options.seed : static_cast<std::uint64_t>(start_) ^ id_;
    if (sample_bytes_ != 0) filter_ = std::make_unique<detail::sample_filter>();
    common_ = new_shard().get();
    common_->lockless = sample_bytes_ != 0 && one_thread;
  }

  // What every call reads (the id, the mode, the filter) first, in one line.
  [[no_unique_address]] Upstream upstream_{};
  const std::uint64_t id_ = detail::next_tracking_id.fetch_add(1, std::memory_order_relaxed);
  std::size_t sample_bytes_ = 0;                   // 0: exact
  std::unique_ptr<detail::sample_filter> filter_;  // sampled mode only
  // Sampled mode's records, keyed by address, under a one-flag lock (held for
  // one insert or erase; the mutex's calls cost a record a fifth more).
  mutable std::conditional_t<one_thread, no_lock, detail::shard_lock> samples_lock_;
  address_table<record> samples_{64};
  std::int64_t start_ = 0;
  std::uint64_t seed_ = 0;
  mutable Lock registry_lock_;
  std::vector<std::shared_ptr<shard>> shards_;  // the common shard first
  shard* common_ = nullptr;
};

}  // namespace strata

#endif  // STRATA_TRACKING_HPP
