// The statistics adaptor: counts what passes through to any host resource.
//
// statistics<Upstream> is itself a host resource. It keeps bytes and blocks in
// use, their peaks (resettable), cumulative totals, and a histogram of request
// sizes in power-of-two buckets. A `statistics_scope` reports what was
// allocated and freed while it lived; scopes nest, each being a snapshot.
//
// Threads: with Atomic = false (the default) the counters are plain integers,
// a few instructions per call, and the adaptor is as thread-safe as a plain
// struct: one thread at a time (wrap it in `synchronized` to share it). With
// Atomic = true every counter is a relaxed atomic and the peaks are kept with a
// compare-and-swap, so threads may share it without a lock; counts are exact,
// and a snapshot taken while others allocate may mix moments.
#ifndef STRATA_STATISTICS_HPP
#define STRATA_STATISTICS_HPP

#include <strata/resource.hpp>

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace strata {

// The number of size buckets: bucket 0 holds 0 and 1 byte, bucket i holds
// sizes in (2^(i-1), 2^i], so bucket 64 holds everything above 2^63.
inline constexpr std::size_t size_buckets = 65;

// The bucket a request of `bytes` is counted in.
constexpr std::size_t size_bucket(std::size_t bytes) noexcept {
  return bytes <= 1 ? 0 : static_cast<std::size_t>(std::bit_width(bytes - 1));
}

// A copy of the counters at one moment.
struct statistics_snapshot {
  std::uint64_t bytes_in_use = 0;
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t blocks_in_use = 0;
  std::uint64_t peak_blocks_in_use = 0;
  std::uint64_t bytes_allocated = 0;                    // cumulative
  std::uint64_t bytes_freed = 0;                        // cumulative
  std::uint64_t allocations = 0;                        // cumulative
  std::uint64_t deallocations = 0;                      // cumulative
  std::array<std::uint64_t, size_buckets> histogram{};  // allocations per size bucket
};

// What happened between two snapshots (a scope's lifetime).
struct statistics_delta {
  std::uint64_t bytes_allocated = 0;
  std::uint64_t bytes_freed = 0;
  std::uint64_t allocations = 0;
  std::uint64_t deallocations = 0;
  // Bytes allocated minus bytes freed: what the interval left live (may be negative).
  std::int64_t net_bytes() const noexcept {
    return static_cast<std::int64_t>(bytes_allocated) - static_cast<std::int64_t>(bytes_freed);
  }
};

template <host_resource Upstream, bool Atomic = false>
class statistics {
  using counter = std::conditional_t<Atomic, std::atomic<std::uint64_t>, std::uint64_t>;

 public:
  statistics() requires std::default_initializable<Upstream>
  = default;
  explicit statistics(Upstream upstream) : upstream_(std::move(upstream)) {}
  statistics(const statistics&) = delete;
  statistics& operator=(const statistics&) = delete;

  // Allocate from the upstream, then count the block; nothing is counted when
  // the upstream throws.
  // In use is its own counter (not allocated - freed), so with threads a
  // block's add always precedes its subtract and the peak never sees a wrap.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    void* p = upstream_.allocate(bytes, alignment);
    add(bytes_allocated_, bytes);
    add(allocations_, 1);
    raise(peak_bytes_, add(bytes_in_use_, bytes));
    raise(peak_blocks_, add(blocks_in_use_, 1));
    add(histogram_[size_bucket(bytes)], 1);
    return p;
  }

  // Return a block to the upstream and count it as freed.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    upstream_.deallocate(p, bytes, alignment);
    subtract(bytes_in_use_, bytes);
    subtract(blocks_in_use_, 1);
  }

  bool is_equal(const statistics& other) const noexcept { return this == &other; }

  // Forward a release of cached memory to the upstream when it can do one.
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // The counters now.
  statistics_snapshot snapshot() const noexcept {
    statistics_snapshot s;
    s.bytes_in_use = load(bytes_in_use_);
    s.blocks_in_use = load(blocks_in_use_);
    s.bytes_allocated = load(bytes_allocated_);
    s.allocations = load(allocations_);
    // Freed is what was allocated and is no longer in use; with threads the two
    // loads may straddle a call, so it is clamped at zero.
    s.bytes_freed = s.bytes_allocated > s.bytes_in_use ? s.bytes_allocated - s.bytes_in_use : 0;
    s.deallocations = s.allocations > s.blocks_in_use ? s.allocations - s.blocks_in_use : 0;
    s.peak_bytes_in_use = load(peak_bytes_);
    s.peak_blocks_in_use = load(peak_blocks_);
    for (std::size_t i = 0; i < size_buckets; ++i) s.histogram[i] = load(histogram_[i]);
    return s;
  }

  std::uint64_t bytes_in_use() const noexcept { return load(bytes_in_use_); }
  std::uint64_t peak_bytes_in_use() const noexcept { return load(peak_bytes_); }

  // Start a new peak from what is in use now, e.g. at the start of a phase.
  void reset_peak() noexcept {
    store(peak_bytes_, load(bytes_in_use_));
    store(peak_blocks_, load(blocks_in_use_));
  }

  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

 private:
  // counter += value; returns the new value.
  static std::uint64_t add(counter& c, std::uint64_t value) noexcept {
    if constexpr (Atomic)
      return c.fetch_add(value, std::memory_order_relaxed) + value;
    else
      return c += value;
  }
  // counter -= value.
  static void subtract(counter& c, std::uint64_t value) noexcept {
    if constexpr (Atomic)
      c.fetch_sub(value, std::memory_order_relaxed);
    else
      c -= value;
  }
  static std::uint64_t load(const counter& c) noexcept {
    if constexpr (Atomic)
      return c.load(std::memory_order_relaxed);
    else
      return c;
  }
  static void store(counter& c, std::uint64_t value) noexcept {
    if constexpr (Atomic)
      c.store(value, std::memory_order_relaxed);
    else
      c = value;
  }
  // peak = max(peak, value), lock-free when atomic.
  static void raise(counter& peak, std::uint64_t value) noexcept {
    if constexpr (Atomic) {
      std::uint64_t seen = peak.load(std::memory_order_relaxed);
      while (seen < value && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
      }
    } else {
      peak = value > peak ? value : peak;
    }
  }

  [[no_unique_address]] Upstream upstream_{};
  counter bytes_allocated_{0};
  counter allocations_{0};
  counter bytes_in_use_{0};
  counter blocks_in_use_{0};
  counter peak_bytes_{0};
  counter peak_blocks_{0};
  std::array<counter, size_buckets> histogram_{};
};

// What a statistics adaptor served while this object lived. Scopes nest: each
// compares the counters at its construction with the counters when asked.
template <class Statistics>
class statistics_scope {
 public:
  explicit statistics_scope(const Statistics& source) noexcept
      : source_(&source), start_(source.snapshot()) {}

  // Allocated and freed since the scope began (all threads, if shared).
  statistics_delta delta() const noexcept {
    const statistics_snapshot now = source_->snapshot();
    return {now.bytes_allocated - start_.bytes_allocated, now.bytes_freed - start_.bytes_freed,
            now.allocations - start_.allocations, now.deallocations - start_.deallocations};
  }

 private:
  const Statistics* source_;
  statistics_snapshot start_;
};

}  // namespace strata

#endif  // STRATA_STATISTICS_HPP
