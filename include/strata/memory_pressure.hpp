// Memory-pressure monitoring: thresholds on process RSS, on the strata heap's
// committed bytes, or on any reading (a resource's bytes in use) that call the
// program back (drop caches, trim pools) when crossed.
//
// A threshold fires when a poll finds its reading at or above it while it was
// armed; it then stays quiet until a poll finds the reading below it again
// (edge-triggered, so a steady high level calls back once, not on every poll).
// Polls come from poll() (the CPU facade calls it on its allocation slow path,
// every `poll_every_bytes` allocated) and, once start() is called, from a
// background thread every `period`. Each threshold's statistics say how often
// it fired and what it last read.
//
// Threads: one poll runs at a time; a poll that finds another running returns
// at once (so a callback that allocates, and so polls, does not deadlock).
// Callbacks run on the polling thread with the monitor busy: they may allocate
// and free, but must not add thresholds.
#ifndef STRATA_MEMORY_PRESSURE_HPP
#define STRATA_MEMORY_PRESSURE_HPP

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata {

// The process's resident set size, from /proc/self/statm (0 when unreadable).
__attribute__((visibility("default"))) std::size_t process_resident_bytes() noexcept;

// Bytes the strata heap holds committed (strata_stats_get).
__attribute__((visibility("default"))) std::size_t heap_committed_bytes() noexcept;

enum class pressure_source { process_rss, heap_committed, reading };

// What a callback is told.
struct pressure_event {
  std::size_t threshold_id;
  pressure_source source;
  std::size_t value;      // the reading that crossed
  std::size_t threshold;  // bytes
};

using pressure_callback = std::function<void(const pressure_event&)>;

// One threshold's configuration and history.
struct pressure_threshold_stats {
  std::size_t id = 0;
  pressure_source source = pressure_source::reading;
  std::size_t threshold = 0;
  std::uint64_t times_fired = 0;
  std::size_t last_value = 0;   // at the last poll
  std::size_t fired_value = 0;  // at the last firing
  bool armed = true;
};

class memory_pressure {
 public:
  memory_pressure() = default;
  memory_pressure(const memory_pressure&) = delete;
  memory_pressure& operator=(const memory_pressure&) = delete;
  // Stop the background thread before the thresholds go.
  ~memory_pressure() { stop(); }

  // Watch process RSS or heap committed bytes; returns the threshold's id.
  std::size_t add_threshold(pressure_source source, std::size_t bytes, pressure_callback callback) {
    return add(
        source,
        source == pressure_source::process_rss ? &process_resident_bytes : &heap_committed_bytes,
        bytes, std::move(callback));
  }

  // Watch any reading, e.g. [&] { return resource.bytes_in_use(); }.
  std::size_t add_threshold(std::function<std::size_t()> read, std::size_t bytes,
                            pressure_callback callback) {
    return add(pressure_source::reading, std::move(read), bytes, std::move(callback));
  }

  // Read every source once and call back for each threshold crossed upward;
  // returns how many fired (0 also when another poll is running).
  std::size_t poll() {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    ++polls_;
    std::size_t fired = 0;
    for (watch& w : watches_) {
      const std::size_t value = w.read();
      w.stats.last_value = value;
      if (value < w.stats.threshold) {
        w.stats.armed = true;
        continue;
      }
      if (!w.stats.armed) continue;
      w.stats.armed = false;
      ++w.stats.times_fired;
      w.stats.fired_value = value;
      ++fired;
      w.callback({w.stats.id, w.stats.source, value, w.stats.threshold});
    }
    return fired;
  }

  // Every threshold's statistics, in the order they were added.
  std::vector<pressure_threshold_stats> statistics() const {
    std::lock_guard lock(mutex_);
    std::vector<pressure_threshold_stats> out;
    for (const watch& w : watches_) out.push_back(w.stats);
    return out;
  }
  std::uint64_t polls() const {
    std::lock_guard lock(mutex_);
    return polls_;
  }

  // Poll every `period` on a background thread until stop().
  void start(std::chrono::milliseconds period) {
    stop();
    std::lock_guard lock(thread_mutex_);
    stopping_ = false;
    thread_ = std::thread([this, period] {
      std::unique_lock wait_lock(thread_mutex_);
      while (!wake_.wait_for(wait_lock, period, [this] { return stopping_; })) {
        wait_lock.unlock();
        poll();
        wait_lock.lock();
      }
    });
  }

  // Stop the background thread, if running, and wait for it.
  void stop() {
    {
      std::lock_guard lock(thread_mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct watch {
    std::function<std::size_t()> read;
    pressure_callback callback;
    pressure_threshold_stats stats;
  };

  // Register one threshold.
  std::size_t add(pressure_source source, std::function<std::size_t()> read, std::size_t bytes,
                  pressure_callback callback) {
    std::lock_guard lock(mutex_);
    pressure_threshold_stats stats;
    stats.id = watches_.size();
    stats.source = source;
    stats.threshold = bytes;
    watches_.push_back({std::move(read), std::move(callback), stats});
    return stats.id;
  }

  mutable std::mutex mutex_;
  std::vector<watch> watches_;
  std::uint64_t polls_ = 0;
  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata

#endif  // STRATA_MEMORY_PRESSURE_HPP
