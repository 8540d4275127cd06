// strata GPU resources: the managed-memory pool, seed 002's unified allocator.
// It is the device pool's algorithm (bfc, size-binned best fit, with stream
// order on top) over regions of managed memory, plus prefetch and advice.
//
//   strata::gpu::managed_pool pool(dev, {.prefetch = strata::gpu::prefetch_policy::to_device});
//   float* x = static_cast<float*>(pool.allocate(bytes, s));  // pages on their way to the GPU
//   pool.prefetch(x, bytes, strata::gpu::memory_location::host, s);  // bring them back
//   pool.deallocate(x, bytes, s);
//
// A freed block keeps its pages where they are, so reuse hands back memory
// with the residency it had: a block the GPU last used is still on the GPU.
// The prefetch policy moves every block handed out to the device or the host
// on the allocating stream (allocate_now uses the default stream); prefetch()
// and advise() act on part of a live block. Requests of 0 bytes get null;
// a request above the capacity throws capacity_error (a std::bad_alloc naming
// the size); freeing, prefetching or advising a pointer the pool does not hold
// throws device_error(invalid_argument). Thread-safe.
#ifndef STRATA_GPU_MANAGED_POOL_HPP
#define STRATA_GPU_MANAGED_POOL_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/managed_upstream.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::gpu {

// Where the pool moves each block it hands out.
enum class prefetch_policy { none, to_device, to_host };

// bfc settings for managed memory: the device pool's, but regions start at
// 2 MiB (a large page) and stop at 1 GiB, since managed memory is host memory too.
inline bfc_config managed_pool_blocks() {
  bfc_config blocks = device_pool_blocks();
  blocks.initial_region_bytes = std::size_t{2} << 20;
  blocks.max_region_bytes = std::size_t{1} << 30;
  return blocks;
}

struct managed_pool_config {
  // Taken in one region when the pool is made (0: none).
  std::size_t reserve_bytes = 0;
  // The most managed memory the pool holds at once.
  std::size_t capacity = SIZE_MAX;
  prefetch_policy prefetch = prefetch_policy::none;
  managed_hints hints;
  bfc_config blocks = managed_pool_blocks();
};

struct managed_pool_statistics {
  device_pool_statistics pool;
  std::size_t prefetches = 0;  // prefetch calls, by policy or on request
  std::size_t prefetched_bytes = 0;
  std::size_t advice_calls = 0;  // advise() on blocks (region hints not counted)
};

class managed_pool : public stream_ordered_resource<managed_pool> {
 public:
  static constexpr memory_access access = memory_access::managed;

  explicit managed_pool(device& dev, managed_pool_config config = {})
      : pool_(managed_upstream(dev, config.hints), pool_config(config)), policy_(config.prefetch) {}
  managed_pool(const managed_pool&) = delete;
  managed_pool& operator=(const managed_pool&) = delete;

  using stream_ordered_resource::allocate;
  using stream_ordered_resource::deallocate;

  // Move part of a live block to `to`, in the order of `s`.
  void prefetch(const void* p, std::size_t bytes, memory_location to, stream s) {
    check_inside(p, bytes, "prefetch");
    move(p, bytes, to, s);
  }

  // A cudaMemAdvise hint on part of a live block.
  void advise(const void* p, std::size_t bytes, memory_advice advice, memory_location where) {
    check_inside(p, bytes, "advise");
    pool_.owner().advise(p, bytes, advice, where);
    advice_calls_.fetch_add(1, std::memory_order_relaxed);
  }

  // Free regions back to the device until at most keep_bytes are free; bytes returned.
  std::size_t trim(std::size_t keep_bytes = 0) { return pool_.trim(keep_bytes); }

  // This pool's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return pool_.ledger(); }
  const ledger_entry& ledger() const noexcept { return pool_.ledger(); }

  managed_pool_statistics statistics() const {
    managed_pool_statistics s;
    s.pool = pool_.statistics();
    s.prefetches = prefetches_.load(std::memory_order_relaxed);
    s.prefetched_bytes = prefetched_bytes_.load(std::memory_order_relaxed);
    s.advice_calls = advice_calls_.load(std::memory_order_relaxed);
    return s;
  }

  bool owns(const void* p) const { return pool_.owns(p); }
  device& owner() const noexcept { return pool_.owner(); }
  friend bool operator==(const managed_pool& a, const managed_pool& b) noexcept { return &a == &b; }

 private:
  friend class stream_ordered_resource<managed_pool>;

  static device_pool_config pool_config(const managed_pool_config& config) {
    device_pool_config c;
    c.reserve_bytes = config.reserve_bytes;
    c.blocks = config.blocks;
    c.blocks.max_reserved_bytes = config.capacity;
    return c;
  }

  // A block from the pool, sent where the policy says on the allocating stream.
  void* allocate_on(std::size_t bytes, std::size_t alignment, stream s) {
    if (bytes == 0) return nullptr;
    void* p = pool_.allocate(bytes, alignment, s);
    place(p, bytes, s);
    return p;
  }

  void deallocate_on(void* p, std::size_t bytes, std::size_t alignment, stream s) {
    if (p != nullptr) pool_.deallocate(p, bytes, alignment, s);
  }

  void* allocate_now(std::size_t bytes, std::size_t alignment) {
    if (bytes == 0) return nullptr;
    void* p = pool_.allocate(bytes, alignment);
    place(p, bytes, stream{});
    return p;
  }

  void deallocate_now(void* p, std::size_t bytes, std::size_t alignment) {
    if (p != nullptr) pool_.deallocate(p, bytes, alignment);
  }

  // The policy's prefetch; a failure gives the block back before it propagates.
  void place(void* p, std::size_t bytes, stream s) {
    if (policy_ == prefetch_policy::none) return;
    try {
      move(p, bytes,
           policy_ == prefetch_policy::to_device ? memory_location::device : memory_location::host,
           s);
    } catch (...) {
      pool_.deallocate(p, bytes, device_alignment, s);
      throw;
    }
  }

  void move(const void* p, std::size_t bytes, memory_location to, stream s) {
    pool_.owner().prefetch_async(p, bytes, to, s);
    prefetches_.fetch_add(1, std::memory_order_relaxed);
    prefetched_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

  // [p, p + bytes) must start a live block and stay inside it.
  void check_inside(const void* p, std::size_t bytes, const char* call) const {
    const std::size_t block = pool_.block_bytes(p);
    if (block == 0)
      throw device_error(errc::invalid_argument, std::string("managed_pool::") + call +
                                                     ": pointer is not a block of this pool");
    if (bytes > block)
      throw device_error(errc::invalid_argument, std::string("managed_pool::") + call + ": " +
                                                     std::to_string(bytes) +
                                                     " bytes run past the block");
  }

  basic_device_pool<managed_upstream> pool_;
  prefetch_policy policy_;
  std::atomic<std::size_t> prefetches_{0};
  std::atomic<std::size_t> prefetched_bytes_{0};
  std::atomic<std::size_t> advice_calls_{0};
};

}  // namespace strata::gpu

#endif
