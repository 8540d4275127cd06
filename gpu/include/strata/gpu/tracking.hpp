// strata GPU resources: the tracking adaptor over a device resource, which
// also keeps the transfer accounting of the copies made through it.
//
//   strata::gpu::tracking<strata::gpu::device_pool> pool(dev);  // owns device_pool(dev)
//   void* p = pool.allocate(bytes, s);                             // recorded, stream order kept
//   pool.copy(p, host, bytes, copy_kind::host_to_device, s);       // timed in stream order
//   pool.leak_report();                                            // the live device blocks
//   pool.transfers(copy_kind::host_to_device).bandwidth();         // bytes per second
//
//   strata::gpu::tracking<strata::gpu::device_pool> sampled(       // sampled mode
//       dev, strata::tracking_options{.sample_bytes = 1 << 20});  // then the pool's arguments
//
// The records are strata::tracking's (include/strata/tracking.hpp): one
// implementation for host and device memory, its records kept outside the
// blocks, its tags, stacks, leak report, off switch and both modes. Exact (the
// default) records every block, and a free of a block it does not hold (double,
// foreign, another adaptor's) prints one line and aborts before the upstream
// sees it. Sampled (tracking_options, the argument after the device) records
// about one block per sample_bytes allocated, with weights that estimate the
// live blocks and bytes; the counters stay exact. It gives up the abort: a
// free it holds no record of, never drawn or already freed, goes to the
// upstream, whose own checks answer (device_pool: device_error, and the free is
// not counted). The sampler is
// per host thread, as the host adaptor's, not per stream: a stream is no unit
// of allocation in a program that uses several from one thread, and the draw
// happens on the host call, before any stream work. strata::tracking calls
// its upstream's synchronous allocate and deallocate, so it is handed a view of
// the device resource whose calls take the stream of the call in progress on
// the thread (set for that call's length, as tracking_tag sets the caller tag)
// and use the resource's stream-ordered forms; stream order is then the
// upstream's, unchanged. The transfer accounting is a transfer_meter over the
// device (transfer_meter.hpp): bytes, copies and achieved bandwidth per
// direction, counted once each copy completes.
//
// A strata device resource itself (stream_ordered_resource.hpp): every CCCL
// spelling, the upstream's memory access. Thread-safe where the upstream is.
#ifndef STRATA_GPU_TRACKING_HPP
#define STRATA_GPU_TRACKING_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/liveness.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>
#include <strata/gpu/transfer_meter.hpp>
#include <strata/tracking.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

namespace strata::gpu {

namespace detail {

// The stream of the stream-ordered tracking call in progress on this thread;
// null while a synchronous one runs.
inline thread_local const stream* current_tracking_stream = nullptr;

// Sets the thread's tracking stream for one call and restores the one before,
// so an adaptor over another adaptor sees its own call's stream.
class tracking_stream_scope {
 public:
  explicit tracking_stream_scope(const stream* s) noexcept : previous_(current_tracking_stream) {
    current_tracking_stream = s;
  }
  tracking_stream_scope(const tracking_stream_scope&) = delete;
  tracking_stream_scope& operator=(const tracking_stream_scope&) = delete;
  ~tracking_stream_scope() { current_tracking_stream = previous_; }

 private:
  const stream* previous_;
};

// An argument for the upstream's constructor, so not the adaptor's own options.
template <class T>
concept upstream_argument = !std::same_as<std::remove_cvref_t<T>, tracking_options>;

// A device resource seen as the host resource strata::tracking wraps: each
// call goes to the resource's form for the tracking call in progress.
template <device_memory_resource Upstream>
class stream_bound_upstream {
 public:
  explicit stream_bound_upstream(Upstream& upstream) noexcept : upstream_(&upstream) {}

  // On the call's stream when it has one, else synchronously.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    if (const stream* s = current_tracking_stream) return upstream_->allocate(bytes, alignment, *s);
    return upstream_->allocate(bytes, alignment);
  }

  // Likewise: in the call's stream order, or synchronously.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    if (const stream* s = current_tracking_stream) {
      upstream_->deallocate(p, bytes, alignment, *s);
      return;
    }
    upstream_->deallocate(p, bytes, alignment);
  }

  bool is_equal(const stream_bound_upstream& other) const noexcept {
    return *upstream_ == *other.upstream_;
  }

 private:
  Upstream* upstream_;
};

}  // namespace detail

template <device_memory_resource Upstream, bool Enabled = tracking_by_default,
          std::size_t StackDepth = 0, class Lock = std::mutex>
class tracking : public stream_ordered_resource<tracking<Upstream, Enabled, StackDepth, Lock>> {
  using records_type =
      ::strata::tracking<detail::stream_bound_upstream<Upstream>, Enabled, StackDepth, Lock>;
  using base = stream_ordered_resource<tracking>;

 public:
  static constexpr memory_access access = Upstream::access;
  static constexpr bool enabled = Enabled;

  // The upstream is made here from the device and `args` (every strata device
  // resource takes its device first); the meter copies on that device. Exact mode.
  template <detail::upstream_argument... Args>
  explicit tracking(device& dev, Args&&... args)
      : tracking(dev, tracking_options{}, std::forward<Args>(args)...) {}
  // As above, in the mode `options` asks for (strata::tracking's options).
  template <class... Args>
  explicit tracking(device& dev, tracking_options options, Args&&... args)
      : upstream_(dev, std::forward<Args>(args)...),
        records_(detail::stream_bound_upstream<Upstream>(upstream_), options),
        meter_(dev) {}
  tracking(const tracking&) = delete;
  tracking& operator=(const tracking&) = delete;
  // The meter waits for its copies, the records go, then the upstream; a
  // second destructor call is one line and abort.
  ~tracking() { life_.end(); }

  using base::allocate;
  using base::deallocate;

  // ---- transfers ---------------------------------------------------------------
  // device::copy_async on `s`, timed by the device's events and counted per direction.
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream s) {
    life_.check("copy");
    meter_.copy(dst, src, bytes, kind, s);
  }
  // The completed copies of one direction: bytes, copies, achieved bandwidth.
  transfer_totals transfers(copy_kind kind) const { return meter_.totals(kind); }
  // Bytes queued in one direction, completed or not.
  std::uint64_t transfers_submitted(copy_kind kind) const { return meter_.submitted(kind); }

  // ---- records -----------------------------------------------------------------
  std::size_t live_blocks() const { return records_.live_blocks(); }
  std::size_t live_bytes() const { return records_.live_bytes(); }
  // Blocks and bytes handed out since the adaptor was made (exact in both modes).
  std::uint64_t total_allocations() const { return records_.total_allocations(); }
  std::uint64_t total_bytes() const { return records_.total_bytes(); }
  // The mean bytes between samples; 0 when exact.
  std::size_t sample_bytes() const noexcept { return records_.sample_bytes(); }
  // strata::tracking's report: one line per live device block, oldest first.
  std::string leak_report() const { return records_.leak_report(); }
  // The host adaptor itself, for the rest of its interface (live(), tags).
  const records_type& records() const noexcept { return records_; }

  Upstream& upstream() noexcept { return upstream_; }

  // Records are per adaptor, so only an adaptor frees its own blocks.
  friend bool operator==(const tracking& a, const tracking& b) noexcept { return &a == &b; }

 private:
  friend base;

  // Recorded, then handed out in the upstream's order of `s`.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream s) {
    life_.check("allocate");
    detail::tracking_stream_scope scope(&s);
    return records_.allocate(bytes, alignment);
  }
  // Forgotten, then freed in the upstream's order of `s`.
  void deallocate_on(void* p, std::size_t bytes, std::size_t alignment, stream s) {
    life_.check("deallocate");
    detail::tracking_stream_scope scope(&s);
    records_.deallocate(p, bytes, alignment);
  }
  // Recorded, from the upstream's synchronous form.
  void* allocate_now(std::size_t bytes, std::size_t alignment) {
    life_.check("allocate");
    detail::tracking_stream_scope scope(nullptr);
    return records_.allocate(bytes, alignment);
  }
  // Forgotten, then freed with the upstream's synchronous form.
  void deallocate_now(void* p, std::size_t bytes, std::size_t alignment) {
    life_.check("deallocate");
    detail::tracking_stream_scope scope(nullptr);
    records_.deallocate(p, bytes, alignment);
  }

  // Declared in this order so the meter waits for its copies first when the
  // adaptor goes, and the upstream outlives the records that name it. The
  // meter asks the device which copies completed, even for a const reader.
  liveness life_{"tracking"};
  Upstream upstream_;
  records_type records_;
  mutable transfer_meter meter_;
};

}  // namespace strata::gpu

#endif
