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
// The records live in an open-addressing hash table keyed by address
// (address_table.hpp), never inside the blocks, so the upstream may hand out
// memory the host cannot touch (device memory). The table is guarded by a lock
// (Lock: std::mutex by default; strata::no_lock for one thread at a time)
// taken after the upstream call, so threads may share the adaptor when the
// upstream is thread-safe.
// Time stamps come from the coarse monotonic clock: enough to age a leak (the
// kernel tick, a few ms), not to time a call; a sequence number orders blocks.
// Freeing a block the adaptor does not
// know (a double free, a foreign pointer) prints one line and aborts, before
// the upstream sees it.
//
// The off switch: tracking<Upstream, false> (the default when the program is
// compiled with STRATA_TRACKING=0) is a pure pass-through holding only the
// upstream: same size, every call inlines to the upstream's, no map, no clock.
#ifndef STRATA_TRACKING_HPP
#define STRATA_TRACKING_HPP

#include <strata/address_table.hpp>
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

  tracking() requires std::default_initializable<Upstream> {
    clock_gettime(CLOCK_MONOTONIC_COARSE, &start_);
  }
  explicit tracking(Upstream upstream) : upstream_(std::move(upstream)) {
    clock_gettime(CLOCK_MONOTONIC_COARSE, &start_);
  }
  tracking(const tracking&) = delete;
  tracking& operator=(const tracking&) = delete;

  // Allocate and record the block under the thread's current tag.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_tagged(bytes, alignment, detail::current_tracking_tag);
  }

  // Allocate and record the block under `tag` (a string that outlives the record).
  void* allocate_tagged(std::size_t bytes, std::size_t alignment, const char* tag) {
    void* p = upstream_.allocate(bytes, alignment);
    record r;
    r.bytes = bytes;
    r.time_ns = now_ns();
    r.tag = tag;
    const std::uint32_t thread = thread_number();
    if constexpr (StackDepth > 0) detail::capture_stack(r.frames.data(), StackDepth, 1);
    try {
      std::lock_guard lock(lock_);
      r.order = pack_order(next_sequence_++, thread, alignment);
      live_.insert(reinterpret_cast<std::uintptr_t>(p), r);
      live_bytes_ += bytes;
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
    return p;
  }

  // Forget the block, then return it; a block never handed out aborts. The
  // caller's size (the one the upstream gets too) keeps live_bytes(), so the
  // record itself is not read back.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    bool found;
    {
      std::lock_guard lock(lock_);
      found = live_.erase(reinterpret_cast<std::uintptr_t>(p), nullptr);
      if (found) live_bytes_ -= bytes;
    }
    if (!found) [[unlikely]]
      detail::report_misuse("free of a block not live in this tracking adaptor",
                            "strata::tracking::deallocate", p);
    upstream_.deallocate(p, bytes, alignment);
  }

  bool is_equal(const tracking& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  std::size_t live_blocks() const {
    std::lock_guard lock(lock_);
    return live_.size();
  }
  std::size_t live_bytes() const {
    std::lock_guard lock(lock_);
    return live_bytes_;
  }

  // Every live block, oldest first.
  std::vector<block> live() const {
    std::vector<std::pair<std::uint64_t, block>> ordered;
    {
      std::lock_guard lock(lock_);
      ordered.reserve(live_.size());
      live_.for_each([&](std::uintptr_t address, const record& r) {
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
        ordered.emplace_back(r.order >> 24, b);
      });
    }
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
    const std::int64_t now = now_ns();
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

  // Pack the sequence number, the thread (saturated at 16 bits) and the alignment.
  static std::uint64_t pack_order(std::uint64_t sequence, std::uint32_t thread,
                                  std::size_t alignment) noexcept {
    const std::uint64_t small_thread = thread < 0xffff ? thread : 0xffff;
    return sequence << 24 | small_thread << 8 |
           static_cast<std::uint64_t>(std::countr_zero(alignment));
  }

  // Nanoseconds since the adaptor was made, from the coarse monotonic clock:
  // a few ns per read (the precise clock and the cycle counter cost 3-9 times
  // more under virtualisation), with the kernel tick's resolution.
  std::int64_t now_ns() const noexcept {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (static_cast<std::int64_t>(now.tv_sec) - start_.tv_sec) * 1'000'000'000 +
           (now.tv_nsec - start_.tv_nsec);
  }

  [[no_unique_address]] Upstream upstream_{};
  timespec start_{};
  mutable Lock lock_;
  address_table<record> live_;
  std::size_t live_bytes_ = 0;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace strata

#endif  // STRATA_TRACKING_HPP
