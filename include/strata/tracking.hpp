// The tracking adaptor: every live allocation of any host resource, for leak
// reports and debugging.
//
// tracking<Upstream> records, for each block it hands out, the size, the
// alignment, when (steady clock), which thread (strata::thread_number()) and a
// caller tag: the tag given to allocate_tagged(), else the calling thread's
// current tag (set with a `tracking_tag` guard), else none. With StackDepth > 0
// it also captures that many return addresses with backtrace() into a fixed
// array per record. leak_report() lists every live block as text.
//
// The records live in a hash map keyed by address, never inside the blocks, so
// the upstream may hand out memory the host cannot touch (device memory). The
// map is guarded by a std::mutex taken after the upstream call, so threads may
// share the adaptor when the upstream is thread-safe. Freeing a block the
// adaptor does not know (a double free, a foreign pointer) prints one line and
// aborts, before the upstream sees it.
//
// The off switch: tracking<Upstream, false> (the default when the program is
// compiled with STRATA_TRACKING=0) is a pure pass-through holding only the
// upstream: same size, every call inlines to the upstream's, no map, no clock.
#ifndef STRATA_TRACKING_HPP
#define STRATA_TRACKING_HPP

#include <strata/resource.hpp>
#include <strata/thread_number.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
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
  std::int64_t time_ns = 0;  // steady clock, since the adaptor was made
  std::uint32_t thread = 0;  // strata::thread_number() of the allocating thread
  std::uint32_t depth = 0;   // frames captured
  const char* tag = nullptr;
  std::array<void*, StackDepth> frames{};
};

template <host_resource Upstream, bool Enabled = tracking_by_default, std::size_t StackDepth = 0>
class tracking;

// The off switch: the upstream and nothing else.
template <host_resource Upstream, std::size_t StackDepth>
class tracking<Upstream, false, StackDepth> {
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

template <host_resource Upstream, std::size_t StackDepth>
class tracking<Upstream, true, StackDepth> {
 public:
  static constexpr bool enabled = true;
  using block = tracked_block<StackDepth>;

  tracking() requires std::default_initializable<Upstream> : start_(clock::now()) {}
  explicit tracking(Upstream upstream) : upstream_(std::move(upstream)), start_(clock::now()) {}
  tracking(const tracking&) = delete;
  tracking& operator=(const tracking&) = delete;

  // Allocate and record the block under the thread's current tag.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_tagged(bytes, alignment, detail::current_tracking_tag);
  }

  // Allocate and record the block under `tag` (a string that outlives the record).
  void* allocate_tagged(std::size_t bytes, std::size_t alignment, const char* tag) {
    void* p = upstream_.allocate(bytes, alignment);
    block record;
    record.address = reinterpret_cast<std::uintptr_t>(p);
    record.bytes = bytes;
    record.alignment = alignment;
    record.time_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start_).count();
    record.thread = thread_number();
    record.tag = tag;
    if constexpr (StackDepth > 0)
      record.depth =
          static_cast<std::uint32_t>(detail::capture_stack(record.frames.data(), StackDepth, 1));
    try {
      std::lock_guard lock(mutex_);
      live_.insert_or_assign(record.address, record);
      live_bytes_ += bytes;
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
    return p;
  }

  // Forget the block, then return it; a block never handed out aborts.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    {
      std::lock_guard lock(mutex_);
      const auto found = live_.find(reinterpret_cast<std::uintptr_t>(p));
      if (found == live_.end()) [[unlikely]]
        detail::report_misuse("free of a block not live in this tracking adaptor",
                              "strata::tracking::deallocate", p);
      live_bytes_ -= found->second.bytes;
      live_.erase(found);
    }
    upstream_.deallocate(p, bytes, alignment);
  }

  bool is_equal(const tracking& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  std::size_t live_blocks() const {
    std::lock_guard lock(mutex_);
    return live_.size();
  }
  std::size_t live_bytes() const {
    std::lock_guard lock(mutex_);
    return live_bytes_;
  }

  // Every live block, oldest first.
  std::vector<block> live() const {
    std::vector<block> out;
    {
      std::lock_guard lock(mutex_);
      out.reserve(live_.size());
      for (const auto& entry : live_) out.push_back(entry.second);
    }
    std::sort(out.begin(), out.end(), [](const block& a, const block& b) {
      return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.address < b.address;
    });
    return out;
  }

  // A text report: a summary line, then one line per live block (oldest first)
  // with its address, size, alignment, thread, tag and age, and its stack.
  std::string leak_report() const {
    const std::vector<block> blocks = live();
    std::size_t bytes = 0;
    for (const block& b : blocks) bytes += b.bytes;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start_).count();
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
  using clock = std::chrono::steady_clock;

  [[no_unique_address]] Upstream upstream_{};
  clock::time_point start_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uintptr_t, block> live_;
  std::size_t live_bytes_ = 0;
};

}  // namespace strata

#endif  // STRATA_TRACKING_HPP
