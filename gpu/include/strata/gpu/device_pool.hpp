// strata GPU resources: the device pool, strata::bfc over device memory with
// stream order on top. basic_device_pool is the algorithm over any upstream
// that takes regions from the device (device_upstream: cudaMalloc;
// managed_upstream: cudaMallocManaged, see managed_pool.hpp).
//
//   strata::gpu::device_pool pool(dev, {.reserve_bytes = 8ull << 30});
//   void* p = pool.allocate(bytes, stream_a);   // best fit, no device call
//   pool.deallocate(p, bytes, stream_a);        // reusable on stream_a at once
//   pool.trim();                                // free regions back to the device
//
// Regions come from the device (device_upstream: one device::allocate each),
// reserved up front and grown on demand as bfc_config says; bfc carves them
// and never touches the memory, so the pool runs over address-only memory.
//
// Stream order. A block freed on stream A waits in A's pending queue with an
// event recorded on A at the free. It goes back to bfc (for every stream, and
// to coalesce) once that event has completed, which the pool checks by query
// on each call, never blocking. Until then a request on A may take it at once
// (A's later work runs after A's earlier work) when it fits: the request needs
// at least half of the block. A request bfc cannot serve first moves the
// other streams' pending blocks to its stream (the stream waits on each
// freeing stream's latest event, the host goes on) and takes any that fits;
// only then does the pool wait on the host for pending work and coalesce,
// and only then does it fail (capacity_error, a std::bad_alloc naming the size).
//
// Statistics are bfc's, where pending blocks count as in use, plus the
// pending bytes and the reuse counts. Thread-safe: one mutex guards the pool.
// Freeing a pointer the pool does not hold throws device_error(invalid_argument);
// a call on a destroyed pool, or a second destructor, is one line and abort.
#ifndef STRATA_GPU_DEVICE_POOL_HPP
#define STRATA_GPU_DEVICE_POOL_HPP

#include <strata/bfc.hpp>
#include <strata/gpu/device.hpp>
#include <strata/gpu/device_upstream.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/liveness.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::gpu {

// bfc settings for device memory: cudaMalloc's granule, 64 MiB regions doubling
// up to 64 GiB, no cap on the total but the device's.
inline bfc_config device_pool_blocks() {
  bfc_config blocks;
  blocks.granule = device_alignment;
  blocks.initial_region_bytes = std::size_t{64} << 20;
  blocks.growth = bfc_growth::doubling;
  blocks.max_region_bytes = std::size_t{64} << 30;
  return blocks;
}

struct device_pool_config {
  // Taken from the device in one region when the pool is made (0: none).
  std::size_t reserve_bytes = 0;
  bfc_config blocks = device_pool_blocks();
};

struct device_pool_statistics {
  bfc_statistics blocks;          // pending blocks count as in use here
  std::size_t pending_bytes = 0;  // freed, waiting for their stream's work
  std::size_t pending_blocks = 0;
  std::size_t same_stream_reuses = 0;   // pending blocks taken on their stream
  std::size_t cross_stream_reuses = 0;  // pending blocks taken after a stream wait
  std::size_t host_waits = 0;           // times the pool waited for pending work
};

template <class Upstream>
class basic_device_pool : public stream_ordered_resource<basic_device_pool<Upstream>> {
 public:
  static constexpr memory_access access = Upstream::access;

  // Regions from the device's memory of the upstream's kind.
  explicit basic_device_pool(device& dev, device_pool_config config = {})
      : basic_device_pool(Upstream(dev), config) {}

  // Regions from `upstream`; config.reserve_bytes is taken up front as one free region.
  explicit basic_device_pool(Upstream upstream, device_pool_config config)
      : device_(&upstream.owner()), blocks_(with_reserve(config), std::move(upstream)) {
    blocks_.ledger().set_kind(Upstream::pool_name);
    blocks_.ledger().set_reader(&ledger_figures_of, this);
    if (config.reserve_bytes == 0) return;
    blocks_.deallocate(blocks_.allocate(1), 1);
    reserved_up_front_ = 1;
  }
  basic_device_pool(const basic_device_pool&) = delete;
  basic_device_pool& operator=(const basic_device_pool&) = delete;

  // Pending work completes before the regions go back (bfc's destructor).
  ~basic_device_pool() {
    life_.end();
    blocks_.ledger().set_reader(nullptr, nullptr);  // no snapshot reads a pool going away
    for (auto& [id, queue] : pending_)
      for (const pending_block& b : queue) {
        device_->synchronize(b.freed);
        device_->destroy_event(b.freed);
      }
    for (event e : spare_events_) device_->destroy_event(e);
  }

  // Give free regions back to the device, largest first, until at most
  // keep_bytes are free; blocks whose work is still pending stay. Bytes returned.
  std::size_t trim(std::size_t keep_bytes = 0) {
    life_.check("trim");
    std::lock_guard lock(mutex_);
    reclaim_completed();
    return blocks_.trim(keep_bytes);
  }

  // This pool's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return blocks_.ledger(); }
  const ledger_entry& ledger() const noexcept { return blocks_.ledger(); }

  device_pool_statistics statistics() const {
    life_.check("statistics");
    std::lock_guard lock(mutex_);
    device_pool_statistics s = counts_;
    s.blocks = blocks_.statistics();
    s.blocks.allocations -= reserved_up_front_;  // the reservation was no request
    return s;
  }

  // Whether `p` is a block this pool has handed out and not taken back.
  bool owns(const void* p) const {
    life_.check("owns");
    std::lock_guard lock(mutex_);
    return live_.contains(const_cast<void*>(p));
  }

  // The bytes requested for the live block at `p`; 0 when `p` is not one.
  std::size_t block_bytes(const void* p) const {
    life_.check("block_bytes");
    std::lock_guard lock(mutex_);
    auto at = live_.find(const_cast<void*>(p));
    return at == live_.end() ? 0 : at->second;
  }

  device& owner() const noexcept { return *device_; }
  friend bool operator==(const basic_device_pool& a, const basic_device_pool& b) noexcept {
    return &a == &b;
  }

 private:
  // The ledger's figures, under the pool's lock: regions held, blocks handed out.
  static ledger_figures ledger_figures_of(const void* pool) {
    bfc_statistics s = static_cast<const basic_device_pool*>(pool)->statistics().blocks;
    return {s.bytes_reserved, s.bytes_in_use};
  }
  friend class stream_ordered_resource<basic_device_pool>;

  struct pending_block {
    void* p;
    std::size_t capacity;  // the request bfc carved it for: any request up to it fits
    event freed;
  };
  using pending_queue = std::deque<pending_block>;

  // The bfc settings with room for the reservation in its first region.
  static bfc_config with_reserve(const device_pool_config& config) {
    bfc_config blocks = config.blocks;
    if (config.reserve_bytes != 0) {
      blocks.initial_region_bytes = config.reserve_bytes;
      if (blocks.max_region_bytes < config.reserve_bytes)
        blocks.max_region_bytes = config.reserve_bytes;
    }
    return blocks;
  }

  // Stream order: the stream's own pending blocks, then bfc, then the slow path.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream s) {
    life_.check("allocate");
    std::lock_guard lock(mutex_);
    reclaim_completed();
    if (void* p = take_pending(s, bytes, alignment, false)) {
      ++counts_.same_stream_reuses;
      return p;
    }
    try {
      return carve(bytes, alignment);
    } catch (const std::bad_alloc&) {
      return allocate_short(bytes, alignment, s);
    }
  }

  // The block waits in the stream's queue until the stream's earlier work is done.
  void deallocate_on(void* p, std::size_t bytes, std::size_t, stream s) {
    if (p == nullptr) return;
    life_.check("deallocate");
    std::lock_guard lock(mutex_);
    std::size_t capacity = take_live(p, bytes);
    event freed = spare_event();
    try {
      device_->record(freed, s);
    } catch (...) {
      spare_events_.push_back(freed);
      live_.emplace(p, capacity);
      throw;
    }
    pending_[device_->identify(s)].push_back({p, capacity, freed});
    counts_.pending_bytes += capacity;
    ++counts_.pending_blocks;
  }

  // Memory any stream may use at once: never a pending block.
  void* allocate_now(std::size_t bytes, std::size_t alignment) {
    life_.check("allocate");
    std::lock_guard lock(mutex_);
    reclaim_completed();
    try {
      return carve(bytes, alignment);
    } catch (const std::bad_alloc&) {
      wait_for_pending();
      return carve(bytes, alignment);
    }
  }

  // No work uses the block any more: straight back to bfc.
  void deallocate_now(void* p, std::size_t bytes, std::size_t) {
    if (p == nullptr) return;
    life_.check("deallocate");
    std::lock_guard lock(mutex_);
    std::size_t capacity = take_live(p, bytes);
    blocks_.deallocate(p, capacity);
  }

  // A fresh block from bfc, recorded as live.
  void* carve(std::size_t bytes, std::size_t alignment) {
    live_.reserve(live_.size() + 1);
    void* p = blocks_.allocate(bytes, alignment);
    live_.emplace(p, bytes);
    return p;
  }

  // bfc had nothing: other streams' pending blocks after a stream wait, then
  // everything pending coalesced after a host wait, then failure.
  [[gnu::cold, gnu::noinline]] void* allocate_short(std::size_t bytes, std::size_t alignment,
                                                    stream s) {
    adopt_pending(s);
    if (void* p = take_pending(s, bytes, alignment, true)) {
      ++counts_.cross_stream_reuses;
      return p;
    }
    wait_for_pending();
    return carve(bytes, alignment);
  }

  // The live block's capacity, removed from the live set; a pointer the pool
  // does not hold, or a size larger than the block, is an invalid argument.
  std::size_t take_live(void* p, std::size_t bytes) {
    auto at = live_.find(p);
    if (at == live_.end())
      throw device_error(
          errc::invalid_argument,
          std::string(Upstream::pool_name) + "::deallocate: pointer is not a block of this pool");
    if (bytes > at->second)
      throw device_error(errc::invalid_argument, std::string(Upstream::pool_name) +
                                                     "::deallocate: " + std::to_string(bytes) +
                                                     " bytes is larger than the block");
    std::size_t capacity = at->second;
    live_.erase(at);
    return capacity;
  }

  // The best-fitting pending block of stream s for the request, or null.
  // Unless `any_fit`, the request must need at least half of the block.
  // Streams are told apart by id: the per-thread handle names a different
  // stream on every thread, and CUDA recycles a destroyed stream's handle.
  void* take_pending(stream s, std::size_t bytes, std::size_t alignment, bool any_fit) {
    auto queue = pending_.find(device_->identify(s));
    if (queue == pending_.end()) return nullptr;
    auto best = queue->second.end();
    for (auto it = queue->second.begin(); it != queue->second.end(); ++it) {
      if (it->capacity < bytes || reinterpret_cast<std::uintptr_t>(it->p) % alignment != 0)
        continue;
      if (!any_fit && it->capacity / 2 > bytes) continue;
      if (best == queue->second.end() || it->capacity < best->capacity) best = it;
    }
    if (best == queue->second.end()) return nullptr;
    pending_block b = *best;
    live_.reserve(live_.size() + 1);
    queue->second.erase(best);
    spare_events_.push_back(b.freed);
    counts_.pending_bytes -= b.capacity;
    --counts_.pending_blocks;
    live_.emplace(b.p, b.capacity);
    return b.p;
  }

  // Blocks whose freeing work has run go back to bfc; a stream's events
  // complete in order, so each queue is read from the front until one is pending.
  void reclaim_completed() {
    for (auto& [id, queue] : pending_)
      while (!queue.empty() && device_->query(queue.front().freed)) release_front(queue);
  }

  // Move every other stream's pending blocks to s: s waits on each stream's
  // latest free (a wait takes the event as recorded now), then each moved
  // block gets an event of its own recorded on s after the waits.
  void adopt_pending(stream s) {
    const stream_id own_id = device_->identify(s);
    pending_queue moved;
    for (auto& [id, queue] : pending_) {
      if (id == own_id || queue.empty()) continue;
      device_->wait(s, queue.back().freed);
      moved.insert(moved.end(), queue.begin(), queue.end());
      queue.clear();
    }
    pending_queue& own = pending_[own_id];
    for (pending_block& b : moved) {
      device_->record(b.freed, s);
      own.push_back(b);
    }
  }

  // Block the host until every pending block's work has run, then coalesce.
  void wait_for_pending() {
    bool waited = false;
    for (auto& [id, queue] : pending_) {
      if (queue.empty()) continue;
      device_->synchronize(queue.back().freed);
      waited = true;
      while (!queue.empty()) release_front(queue);
    }
    if (waited) ++counts_.host_waits;
  }

  // The queue's first block back to bfc, its event to the spares.
  void release_front(pending_queue& queue) {
    const pending_block& b = queue.front();
    blocks_.deallocate(b.p, b.capacity);
    spare_events_.push_back(b.freed);
    counts_.pending_bytes -= b.capacity;
    --counts_.pending_blocks;
    queue.pop_front();
  }

  // An event to record, reused from earlier frees.
  event spare_event() {
    if (spare_events_.empty()) return device_->create_event();
    event e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }

  liveness life_{Upstream::pool_name};
  device* device_;
  mutable std::mutex mutex_;
  bfc<Upstream> blocks_;
  std::unordered_map<void*, std::size_t> live_;           // block -> capacity
  std::unordered_map<stream_id, pending_queue> pending_;  // stream -> its frees, in order
  std::vector<event> spare_events_;
  device_pool_statistics counts_;
  std::size_t reserved_up_front_ = 0;  // 1 when the constructor took a region
};

using device_pool = basic_device_pool<device_upstream>;

}  // namespace strata::gpu

#endif
