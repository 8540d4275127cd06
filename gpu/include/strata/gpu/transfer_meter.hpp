// strata GPU resources: transfer accounting, bytes and achieved bandwidth per
// direction (host to device, device to host, device to device).
//
//   strata::gpu::transfer_meter meter(dev);
//   meter.copy(device_block, host_buffer, bytes, copy_kind::host_to_device, s);
//   meter.totals(copy_kind::host_to_device).bandwidth();  // bytes per second
//
// copy() wraps device::copy_async between two timing events recorded on the
// stream, so a copy's time is the device's own measure of it, excluding the
// work queued before it, and neither the stream nor the host waits for a
// callback. A copy counts once its end event has completed: totals() asks the
// device, without blocking, which copies have; submitted() counts what was
// queued. Event pairs are reused. Thread-safe (one mutex). Destruction waits
// for the copies still in flight.
#ifndef STRATA_GPU_TRANSFER_METER_HPP
#define STRATA_GPU_TRANSFER_METER_HPP

#include <strata/gpu/device.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

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

  // The copies in flight are waited for, then every event goes back.
  ~transfer_meter() {
    try {
      for (const in_flight& copy : in_flight_) device_->synchronize(copy.marks.end);
      for (const in_flight& copy : in_flight_) release(copy.marks);
      for (const event_pair& spare : spare_) release(spare);
    } catch (const device_error&) {
      // A device failing at shutdown has nothing left to count.
    }
  }

  // device::copy_async between two timing events, counted once it completes.
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind, stream s) {
    std::lock_guard lock(mutex_);
    const event_pair pair = take_marks();
    try {
      device_->record(pair.start, s);
      device_->copy_async(dst, src, bytes, kind, s);
      device_->record(pair.end, s);
    } catch (...) {
      spare_.push_back(pair);
      throw;
    }
    in_flight_.push_back({pair, bytes, kind});
    submitted_[index(kind)] += bytes;
  }

  // The completed copies of one direction, after asking which have completed.
  transfer_totals totals(copy_kind kind) {
    std::lock_guard lock(mutex_);
    collect();
    return totals_[index(kind)];
  }

  // Bytes queued in one direction, completed or not.
  std::uint64_t submitted(copy_kind kind) const {
    std::lock_guard lock(mutex_);
    return submitted_[index(kind)];
  }

 private:
  struct event_pair {
    event start;
    event end;
  };
  struct in_flight {
    event_pair marks;
    std::size_t bytes;
    copy_kind kind;
  };

  static std::size_t index(copy_kind kind) noexcept { return static_cast<std::size_t>(kind); }

  // A pair of timing events, reused from completed copies when possible.
  event_pair take_marks() {
    if (!spare_.empty()) {
      const event_pair pair = spare_.back();
      spare_.pop_back();
      return pair;
    }
    return {device_->create_event(event_timing::enabled),
            device_->create_event(event_timing::enabled)};
  }

  void release(const event_pair& pair) {
    device_->destroy_event(pair.start);
    device_->destroy_event(pair.end);
  }

  // Count the copies whose end event completed; their events become spares.
  void collect() {
    std::erase_if(in_flight_, [this](const in_flight& copy) {
      if (!device_->query(copy.marks.end)) return false;
      transfer_totals& t = totals_[index(copy.kind)];
      t.busy_ns +=
          static_cast<std::uint64_t>(device_->elapsed(copy.marks.start, copy.marks.end).count());
      t.bytes += copy.bytes;
      ++t.copies;
      spare_.push_back(copy.marks);
      return true;
    });
  }

  device* device_;
  mutable std::mutex mutex_;
  std::vector<in_flight> in_flight_;
  std::vector<event_pair> spare_;
  std::array<transfer_totals, 3> totals_{};
  std::array<std::uint64_t, 3> submitted_{};
};

}  // namespace strata::gpu

#endif
