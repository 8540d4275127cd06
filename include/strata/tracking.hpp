// The tracking adaptor: every live allocation of any host resource, for leak
// reports and debugging.
//
// tracking<Upstream> records, for each block it hands out, the size, the
// alignment, when (coarse monotonic clock), which thread (strata::thread_number()) and a
// caller tag: the tag given to allocate_tagged(), else the calling thread's
// current tag (set with a `tracking_tag` guard), else none. With StackDepth > 0
// it also captures that many return addresses with backtrace() into a fixed
// array per record. leak_report() lists every live block as text.
//
// The records live in open-addressing hash tables keyed by address
// (address_table.hpp), never inside the blocks, so the upstream may hand out
// memory the host cannot touch (device memory). Each thread that calls the
// adaptor records into a shard of its own (detail/tracking_shard.hpp): a table
// under a one-flag lock only that thread takes on its calls, so a call costs
// one uncontended exchange and no shared cache line; a block freed by a thread
// that did not allocate it is looked for in the other shards on a cold path,
// under the registry lock (Lock: std::mutex by default). With
// Lock = strata::no_lock (one thread at a time) there is one shard for all,
// taken without a lock.
// Records stay exact: live_blocks(), live_bytes() and leak_report() see every
// shard, and a shard whose thread exited keeps its records (a new thread
// adopts it). Time stamps come from the coarse monotonic clock, which a thread
// reads once every 16 of its records (a record carries the time of the read
// at most 15 of its thread's records before it, so a block of a thread that
// allocates rarely may look older than it is):
// enough to age a leak (the kernel tick, a few ms), not to time a call; within
// a thread a sequence number orders blocks, between threads the clock does.
// Freeing a block the adaptor does not know (a double free, a foreign
// pointer, on any thread) prints one line and aborts, before the upstream sees
// it; freeing null does nothing.
//
// The off switch: tracking<Upstream, false> (the default when the program is
// compiled with STRATA_TRACKING=0) is a pure pass-through holding only the
// upstream: same size, every call inlines to the upstream's, no map, no clock.
#ifndef STRATA_TRACKING_HPP
#define STRATA_TRACKING_HPP

#include <strata/address_table.hpp>
#include <strata/detail/tracking_shard.hpp>
#include <strata/no_lock.hpp>
#include <strata/resource.hpp>
#include <strata/synchronized.hpp>
#include <strata/thread_number.hpp>

#include <algorithm>
#include <array>
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
  explicit tracking(Upstream upstream) : upstream_(std::move(upstream)) {}

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

  tracking() requires std::default_initializable<Upstream> { start(); }
  explicit tracking(Upstream upstream) : upstream_(std::move(upstream)) { start(); }
  tracking(const tracking&) = delete;
  tracking& operator=(const tracking&) = delete;
  // Tell the threads that hold shards of this adaptor to forget them.
  ~tracking() {
    for (auto& s : shards_) s->orphaned.store(true, std::memory_order_release);
  }

  // Allocate and record the block under the thread's current tag.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_tagged(bytes, alignment, detail::current_tracking_tag);
  }

  // Allocate and record the block under `tag` (a string that outlives the record)
  // in the calling thread's shard: an uncontended lock, no clock call.
  void* allocate_tagged(std::size_t bytes, std::size_t alignment, const char* tag) {
    void* p = upstream_.allocate(bytes, alignment);
    record r;
    r.bytes = bytes;
    r.tag = tag;
    const std::uint32_t thread = thread_number();
    if constexpr (StackDepth > 0) detail::capture_stack(r.frames.data(), StackDepth, 1);
    shard& s = this_thread_shard();
    try {
      shard_guard lock(s.lock);
      r.time_ns = s.now_ns(start_);
      r.order = pack_order(s.next_sequence++, thread, alignment);
      s.live.insert(reinterpret_cast<std::uintptr_t>(p), r);
      s.live_bytes += bytes;
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
    return p;
  }

  // Forget the block, then return it; a block never handed out aborts, and a
  // null pointer is ignored. The caller's size (the one the upstream gets too)
  // keeps live_bytes(), so the record itself is not read back. A block of
  // another thread's shard is looked for there, on a cold path.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    shard& s = this_thread_shard();
    bool found;
    {
      shard_guard lock(s.lock);
      found = s.live.erase(reinterpret_cast<std::uintptr_t>(p), nullptr);
      if (found) s.live_bytes -= bytes;
    }
    if (!found) [[unlikely]]
      forget_elsewhere(p, bytes, &s);
    upstream_.deallocate(p, bytes, alignment);
  }

  bool is_equal(const tracking& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // Blocks live in every shard.
  std::size_t live_blocks() const {
    std::size_t count = 0;
    for_each_shard([&](const shard& s) { count += s.live.size(); });
    return count;
  }
  // Bytes live in every shard.
  std::size_t live_bytes() const {
    std::size_t bytes = 0;
    for_each_shard([&](const shard& s) { bytes += s.live_bytes; });
    return bytes;
  }

  // Every live block, oldest first: in allocation order within a thread, by the
  // coarse clock between threads.
  std::vector<block> live() const {
    std::vector<std::pair<std::pair<std::int64_t, std::uint64_t>, block>> ordered;
    for_each_shard([&](const shard& s) {
      s.live.for_each([&](std::uintptr_t address, const record& r) {
        block b;
        b.address = address;
        b.bytes = r.bytes;
        b.alignment = std::size_t{1} << (r.order & 0xff);
        b.time_ns = r.time_ns;
        b.thread = static_cast<std::uint32_t>(r.order >> 8 & 0xffff);
        b.tag = r.tag;
        if constexpr (StackDepth > 0) {
          b.frames = r.frames;
          while (b.depth < StackDepth && b.frames[b.depth] != nullptr) ++b.depth;
        }
        ordered.emplace_back(std::pair(r.time_ns, r.order >> 24), b);
      });
    });
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<block> out;
    out.reserve(ordered.size());
    for (const auto& entry : ordered) out.push_back(entry.second);
    return out;
  }

  // A text report: a summary line, then one line per live block (oldest first)
  // with its address, size, alignment, thread, tag and age, and its stack.
  std::string leak_report() const {
    const std::int64_t now = clock_ns() - start_;
    const std::vector<block> blocks = live();
    std::size_t bytes = 0;
    for (const block& b : blocks) bytes += b.bytes;
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "strata tracking: %zu live blocks, %zu bytes\n", blocks.size(),
                  bytes);
    out += line;
    for (const block& b : blocks) {
      std::snprintf(line, sizeof line,
                    "  0x%" PRIxPTR " %zu bytes align %zu thread %" PRIu32 " tag %s age %.3f ms\n",
                    b.address, b.bytes, b.alignment, b.thread, b.tag != nullptr ? b.tag : "-",
                    static_cast<double>(now - b.time_ns) / 1e6);
      out += line;
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

  // One thread's records, with the clock it reads once every clock_every records.
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
        if (!chosen) {
          chosen = std::make_shared<shard>();
          shards_.push_back(chosen);
        }
      }
      held.hold(id_, chosen);
      found = chosen.get();
    }
    detail::this_thread_last_shard = {id_, found};
    return *found;
  }

  // Forget a block missing from the caller's shard: it is in another thread's
  // shard (freed by a thread that did not allocate it), or it is not live and
  // the free is reported before the upstream sees it.
  [[gnu::cold, gnu::noinline]] void forget_elsewhere(void* p, std::size_t bytes,
                                                     const shard* mine) {
    bool found = false;
    {
      std::lock_guard lock(registry_lock_);
      for (const auto& s : shards_) {
        if (s.get() == mine) continue;
        shard_guard shard_lock(s->lock);
        found = s->live.erase(reinterpret_cast<std::uintptr_t>(p), nullptr);
        if (found) {
          s->live_bytes -= bytes;
          break;
        }
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

  // Take the start time, the adaptor's id and its common shard.
  void start() {
    start_ = clock_ns();
    shards_.push_back(std::make_shared<shard>());
    common_ = shards_.front().get();
  }

  [[no_unique_address]] Upstream upstream_{};
  std::int64_t start_ = 0;
  const std::uint64_t id_ = detail::next_tracking_id.fetch_add(1, std::memory_order_relaxed);
  mutable Lock registry_lock_;
  std::vector<std::shared_ptr<shard>> shards_;  // the common shard first
  shard* common_ = nullptr;
};

}  // namespace strata

#endif  // STRATA_TRACKING_HPP
