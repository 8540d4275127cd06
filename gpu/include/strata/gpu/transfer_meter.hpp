// strata GPU resources: transfer accounting, bytes and achieved bandwidth per
// direction (host to device, device to host, device to device).
//
//   strata::gpu::transfer_meter meter(dev);
//   meter.copy(device_block, host_buffer, bytes, copy_kind::host_to_device, s);
//   meter.totals(copy_kind::host_to_device).bandwidth();  // bytes per second
//
// copy() wraps device::copy_async between two host functions in stream order:
// the first stamps the time the stream reaches the copy, the second the time
// it has finished, and adds the bytes and the interval to its direction. So a
// copy's time excludes the work queued before it, and the host never waits.
// Totals count completed copies; submitted() counts what was queued.
// Thread-safe (counters are atomics). Destruction waits for the meter's
// queued stamps to run.
#ifndef STRATA_GPU_TRANSFER_METER_HPP
#define STRATA_GPU_TRANSFER_METER_HPP

#include <strata/gpu/device.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata::gpu {

// One direction's completed copies.
struct transfer_totals {
  std::uint64_t bytes = 0;
  std::uint64_t copies = 0;
  std::uint64_t busy_ns = 0;  // summed time from each copy's start to its end

  // Bytes per second over the time copies were running; 0 before any.
  double bandwidth() const noexcept {
    return busy_ns == 0 ? 0.0 : static_cast<double>(bytes) * 1e9 / static_cast<double>(busy_ns);
  }
};

class transfer_meter {
 public:
  explicit transfer_meter(device& dev) noexcept : device_(&dev) {}
  transfer_meter(const transfer_meter&) = delete;
  transfer_meter& operator=(const transfer_meter&) = delete;

  // The end stamps capture the meter: they must run before it goes.
  ~transfer_meter() {
    for (std::size_t n = in_flight_.load(); n != 0; n = in_flight_.load()) in_flight_.wait(n);
  }

  // device::copy_async, timed in stream order and counted when it completes.
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream s) {
    auto started = std::make_shared<std::chrono::steady_clock::time_point>();
    device_->launch_host(s, [started] { *started = std::chrono::steady_clock::now(); });
    device_->copy_async(dst, src, bytes, kind, s);
    submitted_[index(kind)].fetch_add(bytes, std::memory_order_relaxed);
    in_flight_.fetch_add(1);
    try {
      device_->launch_host(s, [this, started, bytes, kind] { complete(*started, bytes, kind); });
    } catch (...) {
      finish_one();
      throw;
    }
  }

  // The completed copies of one direction.
  transfer_totals totals(copy_kind kind) const noexcept {
    const direction& d = directions_[index(kind)];
    transfer_totals t;
    t.bytes = d.bytes.load(std::memory_order_relaxed);
    t.copies = d.copies.load(std::memory_order_relaxed);
    t.busy_ns = d.busy_ns.load(std::memory_order_relaxed);
    return t;
  }

  // Bytes queued in one direction, completed or not.
  std::uint64_t submitted(copy_kind kind) const noexcept {
    return submitted_[index(kind)].load(std::memory_order_relaxed);
  }

 private:
  struct direction {
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint64_t> copies{0};
    std::atomic<std::uint64_t> busy_ns{0};
  };

  static std::size_t index(copy_kind kind) noexcept { return static_cast<std::size_t>(kind); }

  // Runs in stream order after the copy: count it, then release the meter.
  void complete(std::chrono::steady_clock::time_point started, std::size_t bytes,
                copy_kind kind) noexcept {
    auto elapsed = std::chrono::steady_clock::now() - started;
    direction& d = directions_[index(kind)];
    d.busy_ns.fetch_add(static_cast<std::uint64_t>(
                            std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
                        std::memory_order_relaxed);
    d.bytes.fetch_add(bytes, std::memory_order_relaxed);
    d.copies.fetch_add(1, std::memory_order_release);
    finish_one();
  }

  // One queued end stamp fewer; wake a destructor waiting for none.
  void finish_one() noexcept {
    if (in_flight_.fetch_sub(1) == 1) in_flight_.notify_all();
  }

  device* device_;
  std::array<direction, 3> directions_;
  std::array<std::atomic<std::uint64_t>, 3> submitted_{};
  std::atomic<std::size_t> in_flight_{0};
};

}  // namespace strata::gpu

#endif
