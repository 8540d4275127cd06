// The simulated device's memory: synchronous device memory, the stream-ordered
// pool, virtual memory, pinned and managed host memory, and the failure injection.
#include "latency.hpp"
#include "system_state.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

namespace strata::gpu {

using simulated::cached_block;
using simulated::device_state;
using simulated::spend;
using simulated::stream_entry;
using simulated::stream_queue;

namespace {

constexpr std::size_t host_page = 4096;

// Round up to a power of two; 0 when the result would not fit.
std::size_t round_up(std::size_t bytes, std::size_t granularity) {
  if (bytes > std::numeric_limits<std::size_t>::max() - (granularity - 1)) return 0;
  return (bytes + granularity - 1) & ~(granularity - 1);
}

// True once the work queued before the free has run (or its stream is gone).
bool completed(const std::weak_ptr<stream_queue>& queue, std::uint64_t position) {
  const auto q = queue.lock();
  return !q || q->reached(position);
}

// How reports name a freed block.
std::string describe(const char* call, const void* p, std::size_t bytes) {
  char text[96];
  std::snprintf(text, sizeof text, "%s of %p (%zu bytes)", call, p, bytes);
  return text;
}

// Count one device allocation call against the injected failures.
void count_allocation(device_state& d, const char* call, std::size_t bytes) {
  const bool fail = d.out_of_memory || (d.fail_countdown != 0 && --d.fail_countdown == 0);
  if (fail)
    throw device_error(errc::out_of_memory, std::string(call) + " of " + std::to_string(bytes) +
                                                " bytes: out of memory (injected)");
}

// The failure when the capacity (or the address range) has no room.
[[noreturn]] void throw_out_of_memory(const device_state& d, const char* call, std::size_t bytes) {
  throw device_error(errc::out_of_memory, std::string(call) + " of " + std::to_string(bytes) +
                                              " bytes: out of memory (" + std::to_string(d.used) +
                                              " of " + std::to_string(d.config.capacity) +
                                              " bytes in use)");
}

// Whether stream `s` may reuse `block` now: freed on `s` itself, ordered after
// the free through an event, or the free has already run.
bool reusable(const cached_block& block, const stream_entry& s) {
  if (block.stream_id == s.queue->id()) return true;
  const auto known = s.known.find(block.stream_id);
  if (known != s.known.end() && known->second >= block.position) return true;
  return completed(block.queue, block.position);
}

[[noreturn]] void throw_invalid(const std::string& what) {
  throw device_error(errc::invalid_argument, what);
}

}  // namespace

namespace simulated {

// Largest first, so the fewest frees give back the most.
void device_state::release_cached(std::size_t keep) {
  for (auto it = pool_free.end(); it != pool_free.begin() && pool_cached > keep;) {
    --it;
    if (!completed(it->second.queue, it->second.position)) continue;
    spend(config.free_latency);
    release_backing(it->second.p, it->first);
    used -= it->first;
    pool_cached -= it->first;
    it = pool_free.erase(it);
  }
}

}  // namespace simulated

simulated_device::simulated_device(simulated_config config)
    : owned_(std::make_unique<simulated_system>(1, config)), system_(owned_.get()), ordinal_(0) {}

simulated_device::simulated_device(simulated_system& owner, int ordinal)
    : system_(&owner), ordinal_(ordinal) {}

simulated_device::~simulated_device() = default;

// cudaMalloc: the latency of a real device allocation, then the capacity check;
// cached stream-ordered memory is given back once before failing.
void* simulated_device::allocate(std::size_t bytes) {
  simulated_system::state::enter("allocate");
  if (bytes == 0) return nullptr;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  const std::size_t rounded = round_up(bytes, d.config.granularity);
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("allocate (cudaMalloc)");
  }
  spend(d.config.allocate_latency);
  std::lock_guard lock(st.mutex);
  st.reap(d, false);
  count_allocation(d, "allocate", bytes);
  void* p = rounded == 0 ? nullptr : d.take(rounded);
  if (p == nullptr && rounded != 0) {
    d.release_cached(0);
    p = d.take(rounded);
  }
  if (p == nullptr) throw_out_of_memory(d, "allocate", bytes);
  d.live.emplace(p, rounded);
  return p;
}

// cudaFree: returns at once, without waiting for work that may still use the
// block; the block is poisoned and held back until every stream has passed.
void simulated_device::deallocate(void* p) {
  simulated_system::state::enter("deallocate");
  if (p == nullptr) return;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  spend(d.config.free_latency);
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("deallocate (cudaFree)");
  const auto it = d.live.find(p);
  if (it == d.live.end()) throw_invalid("deallocate of memory not from allocate");
  const std::size_t bytes = it->second;
  d.live.erase(it);
  d.used -= bytes;
  d.freed.hold(
      p, bytes, d.config.poison_freed && d.has_bytes(p), st.everything_queued(d),
      [&d, p, bytes] { d.release_backing(p, bytes); }, describe("deallocate", p, bytes));
  st.reap(d, false);
}

// cudaMallocAsync: the smallest cached block this stream may reuse (at most
// twice the request, so small requests do not pin large blocks), else new memory.
void* simulated_device::allocate_async(std::size_t bytes, stream s) {
  simulated_system::state::enter("allocate_async");
  if (bytes == 0) return nullptr;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  const std::size_t rounded = round_up(bytes, d.config.granularity);
  std::lock_guard lock(st.mutex);
  const stream_entry& on = st.resolve(d, s, "allocate_async");
  if (on.capture)
    simulated_system::state::throw_capture(
        "allocate_async on a capturing stream (graph memory nodes are not simulated)");
  count_allocation(d, "allocate_async", bytes);
  if (rounded == 0) throw_out_of_memory(d, "allocate_async", bytes);
  for (auto it = d.pool_free.lower_bound(rounded);
       it != d.pool_free.end() && it->first / 2 <= rounded; ++it) {
    if (!reusable(it->second, on)) continue;
    void* p = it->second.p;
    d.pool_live.emplace(p, it->first);
    d.pool_cached -= it->first;
    d.pool_free.erase(it);
    return p;
  }
  spend(d.config.allocate_latency);
  void* p = d.take(rounded);
  if (p == nullptr) {
    d.release_cached(0);
    p = d.take(rounded);
  }
  if (p == nullptr) throw_out_of_memory(d, "allocate_async", bytes);
  d.pool_live.emplace(p, rounded);
  return p;
}

// cudaFreeAsync: the block is cached at the stream's current position, so its
// stream reuses it at once and others only once ordered after that position;
// when the stream reaches the free, the block's bytes are poisoned.
void simulated_device::deallocate_async(void* p, stream s) {
  simulated_system::state::enter("deallocate_async");
  if (p == nullptr) return;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  stream_entry& on = st.resolve(d, s, "deallocate_async");
  if (on.capture)
    simulated_system::state::throw_capture(
        "deallocate_async on a capturing stream (graph memory nodes are not simulated)");
  const auto it = d.pool_live.find(p);
  if (it == d.pool_live.end()) throw_invalid("deallocate_async of memory not from allocate_async");
  const std::size_t bytes = it->second;
  if (d.config.poison_freed && d.has_bytes(p))
    st.enqueue(
        d, on, [p, bytes] { std::memset(p, simulated::quarantine::poison, bytes); },
        "deallocate_async");
  d.pool_free.emplace(bytes, cached_block{p, on.queue->id(), on.queue, on.queue->last_position()});
  d.pool_cached += bytes;
  d.pool_live.erase(it);
}

// cudaMemPoolAttrReleaseThreshold: applied at the next synchronisation.
void simulated_device::set_release_threshold(std::size_t bytes) {
  simulated_system::state::enter("set_release_threshold");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.devices[ordinal_]->release_threshold = bytes;
}

// cudaMemPoolTrimTo: only blocks whose free has run can go back.
void simulated_device::trim_to(std::size_t bytes) {
  simulated_system::state::enter("trim_to");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.devices[ordinal_]->release_cached(bytes);
}

// cuMemGetAllocationGranularity.
std::size_t simulated_device::vm_granularity() {
  simulated_system::state::enter("vm_granularity");
  return shared().devices[ordinal_]->vm.granularity();
}

// cuMemAddressReserve: address space only, outside the capacity.
void* simulated_device::reserve_address(std::size_t bytes) {
  simulated_system::state::enter("reserve_address");
  auto& st = shared();
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("reserve_address (cuMemAddressReserve)");
  }
  return st.devices[ordinal_]->vm.reserve(bytes);
}

// cuMemAddressFree.
void simulated_device::release_address(void* base, std::size_t bytes) {
  simulated_system::state::enter("release_address");
  auto& st = shared();
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("release_address (cuMemAddressFree)");
  }
  st.devices[ordinal_]->vm.release(base, bytes);
}

// cuMemCreate: the latency of a device allocation, then the capacity check;
// cached stream-ordered memory is given back once before failing.
physical_memory simulated_device::create_physical(std::size_t bytes) {
  simulated_system::state::enter("create_physical");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("create_physical (cuMemCreate)");
  }
  spend(d.config.allocate_latency);
  std::lock_guard lock(st.mutex);
  st.reap(d, false);
  count_allocation(d, "create_physical", bytes);
  const std::uint64_t handle = d.vm.create(bytes);
  if (bytes > d.config.capacity - d.used) d.release_cached(0);
  if (bytes > d.config.capacity - d.used) {
    d.vm.release_handle(handle);
    throw_out_of_memory(d, "create_physical", bytes);
  }
  d.used += bytes;
  return physical_memory{handle};
}

// cuMemRelease: the memory goes back once no mapping uses it either (the
// free's latency is spent where memory goes back).
void simulated_device::release_physical(physical_memory memory) {
  simulated_system::state::enter("release_physical");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("release_physical (cuMemRelease)");
  const std::size_t freed = d.vm.release_handle(memory.handle);
  if (freed != 0) spend(d.config.free_latency);
  d.used -= freed;
}

// cuMemMap.
void simulated_device::map(void* p, std::size_t bytes, physical_memory memory) {
  simulated_system::state::enter("map");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("map (cuMemMap)");
  st.devices[ordinal_]->vm.map(p, bytes, memory.handle);
}

// cuMemSetAccess, read and write for this device.
void simulated_device::set_access(void* p, std::size_t bytes) {
  simulated_system::state::enter("set_access");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("set_access (cuMemSetAccess)");
  st.devices[ordinal_]->vm.set_access(p, bytes);
}

// cuMemUnmap: returns at once; queued work that touches the range later is a violation.
void simulated_device::unmap(void* p, std::size_t bytes) {
  simulated_system::state::enter("unmap");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("unmap (cuMemUnmap)");
  const std::size_t freed = d.vm.unmap(p, bytes);
  if (freed != 0) spend(d.config.free_latency);
  d.used -= freed;
}

// cudaMallocHost: plain page-aligned host memory stands in for page-locked memory.
void* simulated_device::allocate_pinned(std::size_t bytes) {
  simulated_system::state::enter("allocate_pinned");
  if (bytes == 0) return nullptr;
  auto& st = shared();
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("allocate_pinned (cudaMallocHost)");
  }
  const std::size_t rounded = round_up(bytes, host_page);
  void* p = rounded == 0 ? nullptr : std::aligned_alloc(host_page, rounded);
  if (p == nullptr)
    throw device_error(errc::out_of_memory,
                       "allocate_pinned of " + std::to_string(bytes) + " bytes: out of memory");
  std::lock_guard lock(st.mutex);
  st.devices[ordinal_]->pinned.emplace(p, rounded);
  return p;
}

// cudaFreeHost: no wait either; held back and poisoned like device memory.
void simulated_device::deallocate_pinned(void* p) {
  simulated_system::state::enter("deallocate_pinned");
  if (p == nullptr) return;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("deallocate_pinned (cudaFreeHost)");
  const auto it = d.pinned.find(p);
  if (it == d.pinned.end()) throw_invalid("deallocate_pinned of memory not from allocate_pinned");
  const std::size_t bytes = it->second;
  d.pinned.erase(it);
  d.freed.hold(
      p, bytes, d.config.poison_freed, st.everything_queued(d), [p] { std::free(p); },
      describe("deallocate_pinned", p, bytes));
  st.reap(d, false);
}

// cudaMallocManaged: host memory whose pages start on neither side; the
// driver's latency is the device allocation's.
void* simulated_device::allocate_managed(std::size_t bytes) {
  simulated_system::state::enter("allocate_managed");
  if (bytes == 0) return nullptr;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("allocate_managed (cudaMallocManaged)");
  }
  spend(d.config.allocate_latency);
  {
    std::lock_guard lock(st.mutex);
    count_allocation(d, "allocate_managed", bytes);
  }
  void* p = d.managed->allocate(bytes);
  if (p == nullptr)
    throw device_error(errc::out_of_memory,
                       "allocate_managed of " + std::to_string(bytes) + " bytes: out of memory");
  return p;
}

// cudaFree of managed memory: no wait, held back and poisoned like device memory.
void simulated_device::deallocate_managed(void* p) {
  simulated_system::state::enter("deallocate_managed");
  if (p == nullptr) return;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  spend(d.config.free_latency);
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("deallocate_managed (cudaFree)");
  const std::size_t bytes = d.managed->size_of(p);
  if (bytes == 0) throw_invalid("deallocate_managed of memory not from allocate_managed");
  d.freed.hold(
      p, bytes, d.config.poison_freed, st.everything_queued(d), [&d, p] { d.managed->release(p); },
      describe("deallocate_managed", p, bytes));
  st.reap(d, false);
}

// cudaMemAdvise: takes effect at once, outside stream order, as CUDA's does.
void simulated_device::advise(const void* p, std::size_t bytes, memory_advice advice,
                              memory_location where) {
  simulated_system::state::enter("advise");
  if (bytes == 0) return;
  shared().devices[ordinal_]->managed->advise(p, bytes, advice, where);
}

// The host's touch: faults are spent on the calling thread, as the host would stall.
void simulated_device::host_access(const void* p, std::size_t bytes) {
  simulated_system::state::enter("host_access");
  device_state& d = *shared().devices[ordinal_];
  spend(d.managed->touch(p, bytes, memory_location::host, true));
}

// cudaMemGetInfo: the capacity less what allocations and the pool hold.
memory_info simulated_device::memory() {
  simulated_system::state::enter("memory");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  const device_state& d = *st.devices[ordinal_];
  return memory_info{d.config.capacity - d.used, d.config.capacity};
}

// Arm the nth-call failure.
void simulated_device::fail_nth_allocation(std::size_t n) {
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.devices[ordinal_]->fail_countdown = n;
}

// Every allocation call fails while on.
void simulated_device::set_out_of_memory(bool on) {
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.devices[ordinal_]->out_of_memory = on;
}

residency simulated_device::managed_residency(const void* p) {
  return shared().devices[ordinal_]->managed->at(p);
}

managed_statistics simulated_device::managed_stats() {
  return shared().devices[ordinal_]->managed->statistics();
}

// For tests of the release threshold and trim.
std::size_t simulated_device::pool_cached_bytes() {
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  return st.devices[ordinal_]->pool_cached;
}

const simulated_config& simulated_device::config() const noexcept {
  return shared().devices[ordinal_]->config;
}

}  // namespace strata::gpu
