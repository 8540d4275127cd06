// strata GPU resources: the pinned host pool, page-locked buffers for
// transfers, cached because cudaMallocHost costs far more than a copy.
//
//   strata::gpu::pinned_pool staging(dev);
//   void* buffer = staging.allocate(bytes);           // cached, or a new one
//   dev.copy_async(device_block, buffer, bytes, copy_kind::host_to_device, s);
//   staging.deallocate(buffer, bytes, s);             // reusable once s's copy ran
//
// Buffers are sized in powers of two (at least min_bytes) and cached per size.
// The host writes a pinned buffer outside stream order, so a buffer released
// after use on a stream is never handed out again, to any caller, until an
// event recorded on that stream at the release has completed: the pool asks
// by query and never blocks the host. A buffer released without a stream
// (deallocate(p, bytes)) has no work pending and is reusable at once. When the
// device refuses new pinned memory, the pool frees its idle buffers and tries
// once more. Thread-safe: one mutex guards the pool. Freeing a pointer the pool
// does not hold throws device_error(invalid_argument); a call on a destroyed
// pool, or a second destructor, is one line and abort.
#ifndef STRATA_GPU_PINNED_POOL_HPP
#define STRATA_GPU_PINNED_POOL_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/ledger_source.hpp>
#include <strata/gpu/liveness.hpp>
#include <strata/gpu/memory_access.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::gpu {

struct pinned_pool_config {
  // The smallest buffer; every buffer is a power of two at least this large.
  std::size_t min_bytes = 4096;
};

struct pinned_pool_statistics {
  std::size_t bytes_in_use = 0;     // buffers handed out (their full size)
  std::size_t bytes_cached = 0;     // buffers held for reuse, pending or idle
  std::size_t bytes_pending = 0;    // cached buffers whose last copy may still run
  std::size_t hits = 0;             // requests served from the cache
  std::size_t misses = 0;           // requests that took new pinned memory
  std::size_t skipped_pending = 0;  // cached buffers passed over while their copy ran
};

class pinned_pool {
 public:
  static constexpr memory_access access = memory_access::pinned;

  explicit pinned_pool(device& dev, pinned_pool_config config = {})
      : device_(&dev), min_bytes_(std::bit_ceil(config.min_bytes == 0 ? 1 : config.min_bytes)) {}
  pinned_pool(const pinned_pool&) = delete;
  pinned_pool& operator=(const pinned_pool&) = delete;

  // Every buffer goes back to the device once the copies that use it have run;
  // buffers still handed out are the caller's leak, freed here as well.
  ~pinned_pool() {
    life_.end();
    ledger_.leave();  // no snapshot reads a pool going away
    for (auto& [size, list] : cached_)
      for (cached_buffer& b : list) retire(b, true);
    for (auto& [p, size] : live_) device_->deallocate_pinned(p);
    for (event e : spare_events_) device_->destroy_event(e);
  }

  // A buffer of at least `bytes`: a cached one no pending copy uses, or new
  // pinned memory. Zero bytes is a buffer of min_bytes.
  void* allocate(std::size_t bytes) {
    life_.check("allocate");
    std::size_t size = buffer_size(bytes);
    std::lock_guard lock(mutex_);
    if (void* p = take_cached(size)) {
      ++counts_.hits;
      return p;
    }
    live_.reserve(live_.size() + 1);
    void* p = take_new(size);
    live_.emplace(p, size);
    counts_.bytes_in_use += size;
    ++counts_.misses;
    return p;
  }

  // The host is done with the buffer and no queued work uses it.
  void deallocate(void* p, std::size_t bytes) { give_back(p, bytes, std::nullopt); }

  // CCCL's synchronous resource spelling: buffers are page-aligned, so any
  // alignment up to a page is met.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    check_alignment(alignment);
    return allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    check_alignment(alignment);
    deallocate(p, bytes);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment) {
    return allocate(bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) {
    deallocate(p, bytes, alignment);
  }

  // CCCL's get_property, for the property types a bridge (cccl.hpp) maps to
  // pinned memory's access: the host's and the device's.
  template <class Property>
  requires(
      offers(memory_access::pinned,
             property_access<Property>)) friend constexpr void get_property(const pinned_pool&,
                                                                            Property) noexcept {}

  // The buffer's last use was work queued on `s` (a copy from or into it):
  // reusable once an event recorded on `s` now has completed.
  void deallocate(void* p, std::size_t bytes, stream s) { give_back(p, bytes, s); }

  // Free every cached buffer whose copies have run; the bytes freed.
  std::size_t release_idle() {
    life_.check("release_idle");
    std::lock_guard lock(mutex_);
    return release_idle_locked();
  }

  // This pool's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }

  // The counts, with bytes_pending taken from the cache as it stands.
  pinned_pool_statistics statistics() const {
    life_.check("statistics");
    std::lock_guard lock(mutex_);
    pinned_pool_statistics s = counts_;
    for (const auto& [size, list] : cached_)
      for (const cached_buffer& b : list)
        if (b.released) s.bytes_pending += size;
    return s;
  }

  friend bool operator==(const pinned_pool& a, const pinned_pool& b) noexcept { return &a == &b; }

 private:
  // The ledger's figures, under the pool's lock: buffers handed out and cached.
  static ledger_figures ledger_figures_of(const void* pool) {
    pinned_pool_statistics s = static_cast<const pinned_pool*>(pool)->statistics();
    return {s.bytes_in_use + s.bytes_cached, s.bytes_in_use};
  }
  struct cached_buffer {
    void* p;
    std::optional<event> released;  // recorded on the stream of its last use
  };

  // Buffers start on a page: a stricter alignment cannot be promised.
  static void check_alignment(std::size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
      throw device_error(errc::invalid_argument, "pinned_pool: alignment " +
                                                     std::to_string(alignment) +
                                                     " is not a power of two up to 4096");
  }

  // The power of two that serves `bytes`; above the largest, out of memory.
  std::size_t buffer_size(std::size_t bytes) const {
    constexpr std::size_t largest = ~(~std::size_t{0} >> 1);
    if (bytes > largest)
      throw device_error(errc::out_of_memory,
                         "pinned_pool::allocate of " + std::to_string(bytes) + " bytes");
    return std::max(min_bytes_, std::bit_ceil(bytes));
  }

  // A cached buffer of `size` whose last use has completed, or null.
  void* take_cached(std::size_t size) {
    auto list = cached_.find(size);
    if (list == cached_.end()) return nullptr;
    for (auto it = list->second.begin(); it != list->second.end(); ++it) {
      if (it->released && !device_->query(*it->released)) {
        ++counts_.skipped_pending;
        continue;
      }
      cached_buffer b = *it;
      live_.reserve(live_.size() + 1);
      list->second.erase(it);
      settle(b);
      live_.emplace(b.p, size);
      counts_.bytes_cached -= size;
      counts_.bytes_in_use += size;
      return b.p;
    }
    return nullptr;
  }

  // New pinned memory; when the device refuses, free idle buffers and retry once.
  void* take_new(std::size_t size) {
    try {
      return device_->allocate_pinned(size);
    } catch (const device_error& e) {
      if (!e.is_out_of_memory() || release_idle_locked() == 0) throw;
      return device_->allocate_pinned(size);
    }
  }

  // Into the cache, with an event on `s` when work there may still use it.
  void give_back(void* p, std::size_t bytes, std::optional<stream> s) {
    if (p == nullptr) return;
    life_.check("deallocate");
    std::lock_guard lock(mutex_);
    auto at = live_.find(p);
    if (at == live_.end())
      throw device_error(errc::invalid_argument,
                         "pinned_pool::deallocate: pointer is not a buffer of this pool");
    std::size_t size = at->second;
    if (bytes > size)
      throw device_error(
          errc::invalid_argument,
          "pinned_pool::deallocate: " + std::to_string(bytes) + " bytes is larger than the buffer");
    std::vector<cached_buffer>& list = cached_[size];
    list.reserve(list.size() + 1);
    cached_buffer b{p, std::nullopt};
    if (s) {
      b.released = spare_event();
      try {
        device_->record(*b.released, *s);
      } catch (...) {
        spare_events_.push_back(*b.released);
        throw;
      }
    }
    list.push_back(b);
    live_.erase(at);
    counts_.bytes_in_use -= size;
    counts_.bytes_cached += size;
  }

  // Free every cached buffer with nothing pending; the bytes freed.
  std::size_t release_idle_locked() {
    std::size_t freed = 0;
    for (auto& [size, list] : cached_) {
      std::erase_if(list, [&, size = size](const cached_buffer& kept) {
        if (kept.released && !device_->query(*kept.released)) return false;
        cached_buffer b = kept;
        retire(b, false);
        counts_.bytes_cached -= size;
        freed += size;
        return true;
      });
    }
    return freed;
  }

  // The buffer's event, if any, back to the spares: its copy has run.
  void settle(cached_buffer& b) {
    if (!b.released) return;
    spare_events_.push_back(*b.released);
    b.released.reset();
  }

  // Give a cached buffer back to the device, first waiting for its copy when
  // `wait` (destruction), else only once its copy has run.
  void retire(cached_buffer& b, bool wait) {
    if (b.released && wait) device_->synchronize(*b.released);
    settle(b);
    device_->deallocate_pinned(b.p);
  }

  // An event to record, reused from settled buffers.
  event spare_event() {
    if (spare_events_.empty()) return device_->create_event();
    event e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }

  liveness life_{"pinned_pool"};
  device* device_;
  std::size_t min_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;  // buffer -> its size
  std::map<std::size_t, std::vector<cached_buffer>> cached_;
  std::vector<event> spare_events_;
  pinned_pool_statistics counts_;
  // Its figures read under the pool's lock.
  ledger_entry ledger_ = ledger_entry("pinned_pool", ledger_domain::pinned, nullptr,
                                      &ledger_figures_of, this, ledger_source_of(*device_));
};

}  // namespace strata::gpu

#endif
