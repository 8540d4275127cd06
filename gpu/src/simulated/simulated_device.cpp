#include <strata/gpu/simulated.hpp>

#include "address_space.hpp"
#include "managed_memory.hpp"
#include "stream_queue.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::gpu {

namespace {

using simulated::address_space;
using simulated::managed_memory;
using simulated::stream_queue;

// For each stream id, the position of that stream a stream or event is known
// to come after (through the events it waited on): a vector clock.
using stream_clock = std::unordered_map<std::uint64_t, std::uint64_t>;

struct stream_state {
  std::shared_ptr<stream_queue> queue;
  stream_clock known;
};

struct event_state {
  std::weak_ptr<stream_queue> queue;  // expired or null: complete
  std::uint64_t position = 0;
  stream_clock clock;
};

// Stream-ordered memory freed at `position` of stream `stream_id`, cached by the pool.
struct cached_block {
  void* p;
  std::uint64_t stream_id;
  std::weak_ptr<stream_queue> queue;
  std::uint64_t position;
};

constexpr std::size_t host_page = 4096;

// Sleep most of a long latency and spin the rest, so the delay is never
// shorter than configured and not much longer.
void spend(std::chrono::nanoseconds latency) {
  if (latency <= std::chrono::nanoseconds::zero()) return;
  const auto deadline = std::chrono::steady_clock::now() + latency;
  if (latency > std::chrono::milliseconds(1))
    std::this_thread::sleep_for(latency - std::chrono::microseconds(500));
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

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

[[noreturn]] void throw_invalid(const std::string& what) {
  throw device_error(errc::invalid_argument, what);
}

}  // namespace

struct simulated_device::state {
  simulated_config config;
  std::mutex mutex;
  std::optional<address_space> space;                // address-only backing
  std::size_t used = 0;                              // bytes taken from the capacity
  std::unordered_map<void*, std::size_t> live;       // synchronous allocations
  std::unordered_map<void*, std::size_t> pool_live;  // stream-ordered, handed out
  std::multimap<std::size_t, cached_block> pool_free;
  std::size_t pool_cached = 0;
  std::size_t release_threshold = 0;
  std::unordered_map<void*, std::size_t> pinned;
  std::optional<managed_memory> managed;
  std::unique_ptr<stream_state> default_stream;
  std::unordered_map<void*, std::unique_ptr<stream_state>> streams;
  std::unordered_map<void*, std::unique_ptr<event_state>> events;
  std::uint64_t next_stream_id = 1;
  std::size_t fail_countdown = 0;
  bool out_of_memory = false;

  // A fresh stream with its own worker.
  std::unique_ptr<stream_state> make_stream() {
    auto s = std::make_unique<stream_state>();
    s->queue = std::make_shared<stream_queue>(next_stream_id++);
    return s;
  }

  // Map a handle to its stream; a handle this device never made is an error.
  stream_state& find(stream s) {
    if (s.handle == nullptr) return *default_stream;
    const auto it = streams.find(s.handle);
    if (it == streams.end()) throw_invalid("unknown stream");
    return *it->second;
  }

  // Map a handle to its event; a handle this device never made is an error.
  event_state& find(event e) {
    const auto it = events.find(e.handle);
    if (it == events.end()) throw_invalid("unknown event");
    return *it->second;
  }

  // Count one device allocation call against the injected failures.
  void count_allocation(const char* call, std::size_t bytes) {
    const bool fail = out_of_memory || (fail_countdown != 0 && --fail_countdown == 0);
    if (fail)
      throw device_error(errc::out_of_memory, std::string(call) + " of " + std::to_string(bytes) +
                                                  " bytes: out of memory (injected)");
  }

  // The failure when the capacity (or the address range) has no room.
  [[noreturn]] void throw_out_of_memory(const char* call, std::size_t bytes) const {
    throw device_error(errc::out_of_memory, std::string(call) + " of " + std::to_string(bytes) +
                                                " bytes: out of memory (" + std::to_string(used) +
                                                " of " + std::to_string(config.capacity) +
                                                " bytes in use)");
  }

  // Take `bytes` (already rounded) from the capacity and the backing; null when it does not fit.
  void* take(std::size_t bytes) {
    if (bytes > config.capacity - used) return nullptr;
    void* p = space ? space->take(bytes) : std::aligned_alloc(config.granularity, bytes);
    if (p != nullptr) used += bytes;
    return p;
  }

  // Return memory to the backing and the capacity.
  void give(void* p, std::size_t bytes) {
    if (space)
      space->give_back(p, bytes);
    else
      std::free(p);
    used -= bytes;
  }

  // Give completed cached blocks back, largest first, until at most `keep` bytes stay cached.
  void release_cached(std::size_t keep) {
    for (auto it = pool_free.end(); it != pool_free.begin() && pool_cached > keep;) {
      --it;
      if (!completed(it->second.queue, it->second.position)) continue;
      spend(config.free_latency);
      give(it->second.p, it->first);
      pool_cached -= it->first;
      it = pool_free.erase(it);
    }
  }

  // Whether stream `s` may reuse `block` now: freed on `s` itself, ordered after
  // the free through an event, or the free has already run.
  static bool reusable(const cached_block& block, const stream_state& s) {
    if (block.stream_id == s.queue->id()) return true;
    const auto known = s.known.find(block.stream_id);
    if (known != s.known.end() && known->second >= block.position) return true;
    return completed(block.queue, block.position);
  }

  // Every stream and the position it must reach for "everything queued so far".
  std::vector<std::pair<std::shared_ptr<stream_queue>, std::uint64_t>> frontier() {
    std::vector<std::pair<std::shared_ptr<stream_queue>, std::uint64_t>> result;
    result.emplace_back(default_stream->queue, default_stream->queue->last_position());
    for (auto& [handle, s] : streams) result.emplace_back(s->queue, s->queue->last_position());
    return result;
  }
};

// Reserve the address range up front so address-only mode never fails later for want of it.
simulated_device::simulated_device(simulated_config config) : state_(std::make_unique<state>()) {
  if (config.granularity == 0 || (config.granularity & (config.granularity - 1)) != 0)
    throw_invalid("granularity must be a power of two");
  state_->config = config;
  state_->managed.emplace(config.managed);
  if (config.backing == memory_backing::address_only) state_->space.emplace(config.capacity);
  state_->default_stream = state_->make_stream();
}

// Streams first (their work may still touch memory), then every block still held.
simulated_device::~simulated_device() {
  state_->streams.clear();
  state_->default_stream.reset();
  for (auto& [p, bytes] : state_->live) state_->give(p, bytes);
  for (auto& [p, bytes] : state_->pool_live) state_->give(p, bytes);
  for (auto& [bytes, block] : state_->pool_free) state_->give(block.p, bytes);
  for (auto& [p, bytes] : state_->pinned) std::free(p);
}

// cudaMalloc: the latency of a real device allocation, then the capacity check;
// cached stream-ordered memory is given back once before failing.
void* simulated_device::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = round_up(bytes, state_->config.granularity);
  spend(state_->config.allocate_latency);
  std::lock_guard lock(state_->mutex);
  state_->count_allocation("allocate", bytes);
  void* p = rounded == 0 ? nullptr : state_->take(rounded);
  if (p == nullptr && rounded != 0) {
    state_->release_cached(0);
    p = state_->take(rounded);
  }
  if (p == nullptr) state_->throw_out_of_memory("allocate", bytes);
  state_->live.emplace(p, rounded);
  return p;
}

// cudaFree: waits for the whole device, since queued work may still use the block.
void simulated_device::deallocate(void* p) {
  if (p == nullptr) return;
  synchronize();
  spend(state_->config.free_latency);
  std::lock_guard lock(state_->mutex);
  const auto it = state_->live.find(p);
  if (it == state_->live.end()) throw_invalid("deallocate of memory not from allocate");
  state_->give(p, it->second);
  state_->live.erase(it);
}

// cudaMallocAsync: the smallest cached block this stream may reuse (at most
// twice the request, so small requests do not pin large blocks), else new memory.
void* simulated_device::allocate_async(std::size_t bytes, stream s) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = round_up(bytes, state_->config.granularity);
  std::lock_guard lock(state_->mutex);
  const stream_state& on = state_->find(s);
  state_->count_allocation("allocate_async", bytes);
  if (rounded == 0) state_->throw_out_of_memory("allocate_async", bytes);
  for (auto it = state_->pool_free.lower_bound(rounded);
       it != state_->pool_free.end() && it->first / 2 <= rounded; ++it) {
    if (!state::reusable(it->second, on)) continue;
    void* p = it->second.p;
    state_->pool_live.emplace(p, it->first);
    state_->pool_cached -= it->first;
    state_->pool_free.erase(it);
    return p;
  }
  spend(state_->config.allocate_latency);
  void* p = state_->take(rounded);
  if (p == nullptr) {
    state_->release_cached(0);
    p = state_->take(rounded);
  }
  if (p == nullptr) state_->throw_out_of_memory("allocate_async", bytes);
  state_->pool_live.emplace(p, rounded);
  return p;
}

// cudaFreeAsync: the block is cached at the stream's current position, so its
// stream reuses it at once and others only once ordered after that position.
void simulated_device::deallocate_async(void* p, stream s) {
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  const stream_state& on = state_->find(s);
  const auto it = state_->pool_live.find(p);
  if (it == state_->pool_live.end())
    throw_invalid("deallocate_async of memory not from allocate_async");
  state_->pool_free.emplace(it->second,
                            cached_block{p, on.queue->id(), on.queue, on.queue->last_position()});
  state_->pool_cached += it->second;
  state_->pool_live.erase(it);
}

// cudaMemPoolAttrReleaseThreshold: applied at the next synchronisation.
void simulated_device::set_release_threshold(std::size_t bytes) {
  std::lock_guard lock(state_->mutex);
  state_->release_threshold = bytes;
}

// cudaMemPoolTrimTo: only blocks whose free has run can go back.
void simulated_device::trim_to(std::size_t bytes) {
  std::lock_guard lock(state_->mutex);
  state_->release_cached(bytes);
}

// cudaMallocHost: plain page-aligned host memory stands in for page-locked memory.
void* simulated_device::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = round_up(bytes, host_page);
  void* p = rounded == 0 ? nullptr : std::aligned_alloc(host_page, rounded);
  if (p == nullptr)
    throw device_error(errc::out_of_memory,
                       "allocate_pinned of " + std::to_string(bytes) + " bytes: out of memory");
  std::lock_guard lock(state_->mutex);
  state_->pinned.emplace(p, rounded);
  return p;
}

// cudaFreeHost: only memory from allocate_pinned.
void simulated_device::deallocate_pinned(void* p) {
  if (p == nullptr) return;
  std::lock_guard lock(state_->mutex);
  if (state_->pinned.erase(p) == 0)
    throw_invalid("deallocate_pinned of memory not from allocate_pinned");
  std::free(p);
}

// cudaMallocManaged: host memory whose pages start on neither side; the
// driver's latency is the device allocation's.
void* simulated_device::allocate_managed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  spend(state_->config.allocate_latency);
  {
    std::lock_guard lock(state_->mutex);
    state_->count_allocation("allocate_managed", bytes);
  }
  void* p = state_->managed->allocate(bytes);
  if (p == nullptr)
    throw device_error(errc::out_of_memory,
                       "allocate_managed of " + std::to_string(bytes) + " bytes: out of memory");
  return p;
}

// cudaFree of managed memory: waits for the device like deallocate.
void simulated_device::deallocate_managed(void* p) {
  if (p == nullptr) return;
  synchronize();
  spend(state_->config.free_latency);
  if (!state_->managed->release(p))
    throw_invalid("deallocate_managed of memory not from allocate_managed");
}

// cudaMemPrefetchAsync: the pages move when the stream reaches the prefetch,
// and the stream spends the migration time.
void simulated_device::prefetch_async(const void* p, std::size_t bytes, memory_location to,
                                      stream s) {
  if (bytes == 0) return;
  if (!state_->managed->contains(p, bytes))
    throw_invalid("prefetch_async of memory not from allocate_managed");
  std::shared_ptr<stream_queue> queue;
  {
    std::lock_guard lock(state_->mutex);
    queue = state_->find(s).queue;
  }
  queue->push([this, p, bytes, to] { spend(state_->managed->prefetch(p, bytes, to)); });
}

// cudaMemAdvise: takes effect at once, outside stream order, as CUDA's does.
void simulated_device::advise(const void* p, std::size_t bytes, memory_advice advice,
                              memory_location where) {
  if (bytes == 0) return;
  state_->managed->advise(p, bytes, advice, where);
}

// The host's touch: faults are spent on the calling thread, as the host would stall.
void simulated_device::host_access(const void* p, std::size_t bytes) {
  spend(state_->managed->touch(p, bytes, memory_location::host, true));
}

// cudaStreamCreate: a new queue with its own worker thread.
stream simulated_device::create_stream() {
  std::lock_guard lock(state_->mutex);
  auto s = state_->make_stream();
  void* handle = s.get();
  state_->streams.emplace(handle, std::move(s));
  return stream{handle};
}

// cudaStreamDestroy: the worker finishes the queue outside the device lock.
void simulated_device::destroy_stream(stream s) {
  if (s.handle == nullptr) throw_invalid("the default stream cannot be destroyed");
  std::unique_ptr<stream_state> doomed;
  {
    std::lock_guard lock(state_->mutex);
    const auto it = state_->streams.find(s.handle);
    if (it == state_->streams.end()) throw_invalid("unknown stream");
    doomed = std::move(it->second);
    state_->streams.erase(it);
  }
}

// cudaStreamSynchronize: wait outside the lock, then apply the release threshold.
void simulated_device::synchronize(stream s) {
  std::shared_ptr<stream_queue> queue;
  std::uint64_t position;
  {
    std::lock_guard lock(state_->mutex);
    queue = state_->find(s).queue;
    position = queue->last_position();
  }
  queue->wait_for(position);
  std::lock_guard lock(state_->mutex);
  state_->release_cached(state_->release_threshold);
}

// cudaDeviceSynchronize: every stream reaches what was queued when the call began.
void simulated_device::synchronize() {
  std::vector<std::pair<std::shared_ptr<stream_queue>, std::uint64_t>> frontier;
  {
    std::lock_guard lock(state_->mutex);
    frontier = state_->frontier();
  }
  for (auto& [queue, position] : frontier) queue->wait_for(position);
  std::lock_guard lock(state_->mutex);
  state_->release_cached(state_->release_threshold);
}

// cudaEventCreate: a never-recorded event, complete.
event simulated_device::create_event() {
  std::lock_guard lock(state_->mutex);
  auto e = std::make_unique<event_state>();
  void* handle = e.get();
  state_->events.emplace(handle, std::move(e));
  return event{handle};
}

// cudaEventDestroy: waits already queued keep their own copy of the record.
void simulated_device::destroy_event(event e) {
  std::lock_guard lock(state_->mutex);
  if (state_->events.erase(e.handle) == 0) throw_invalid("unknown event");
}

// cudaEventRecord: the event stands for everything queued on the stream so far,
// and carries what that stream is known to come after.
void simulated_device::record(event e, stream s) {
  std::lock_guard lock(state_->mutex);
  event_state& marker = state_->find(e);
  const stream_state& on = state_->find(s);
  marker.queue = on.queue;
  marker.position = on.queue->last_position();
  marker.clock = on.known;
  marker.clock[on.queue->id()] = marker.position;
}

// cudaEventQuery: never blocks.
bool simulated_device::query(event e) {
  std::lock_guard lock(state_->mutex);
  const event_state& marker = state_->find(e);
  return completed(marker.queue, marker.position);
}

// cudaEventSynchronize: wait outside the lock, then apply the release threshold.
void simulated_device::synchronize(event e) {
  std::shared_ptr<stream_queue> queue;
  std::uint64_t position;
  {
    std::lock_guard lock(state_->mutex);
    const event_state& marker = state_->find(e);
    queue = marker.queue.lock();
    position = marker.position;
  }
  if (queue) queue->wait_for(position);
  std::lock_guard lock(state_->mutex);
  state_->release_cached(state_->release_threshold);
}

// cudaStreamWaitEvent: the stream's worker, not the host, blocks on the event;
// the stream now comes after everything the event came after.
void simulated_device::wait(stream s, event e) {
  std::lock_guard lock(state_->mutex);
  const event_state& marker = state_->find(e);
  stream_state& on = state_->find(s);
  for (const auto& [id, position] : marker.clock) {
    std::uint64_t& known = on.known[id];
    if (known < position) known = position;
  }
  if (marker.position == 0 || marker.queue.expired()) return;
  on.queue->push([queue = marker.queue, position = marker.position] {
    if (const auto q = queue.lock()) q->wait_for(position);
  });
}

// cudaMemcpyAsync: a memcpy in stream order; address-only memory has nothing to
// copy. Managed memory on the side the kind names the device's is a device touch.
void simulated_device::copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind,
                                  stream s) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr) throw_invalid("copy_async with a null pointer");
  std::shared_ptr<stream_queue> queue;
  bool moves_bytes;
  {
    std::lock_guard lock(state_->mutex);
    queue = state_->find(s).queue;
    moves_bytes =
        !state_->space || (!state_->space->contains(dst) && !state_->space->contains(src));
  }
  const memory_location reader =
      kind == copy_kind::host_to_device ? memory_location::host : memory_location::device;
  const memory_location writer =
      kind == copy_kind::device_to_host ? memory_location::host : memory_location::device;
  queue->push([=, this] {
    spend(state_->managed->touch(src, bytes, reader, false) +
          state_->managed->touch(dst, bytes, writer, true));
    if (moves_bytes) std::memcpy(dst, src, bytes);
  });
}

// cudaMemsetAsync: a device write in stream order.
void simulated_device::memset_async(void* p, int value, std::size_t bytes, stream s) {
  if (bytes == 0) return;
  if (p == nullptr) throw_invalid("memset_async of a null pointer");
  std::shared_ptr<stream_queue> queue;
  bool writes_bytes;
  {
    std::lock_guard lock(state_->mutex);
    queue = state_->find(s).queue;
    writes_bytes = !state_->space || !state_->space->contains(p);
  }
  queue->push([=, this] {
    spend(state_->managed->touch(p, bytes, memory_location::device, true));
    if (writes_bytes) std::memset(p, value, bytes);
  });
}

// cudaLaunchHostFunc: the stand-in for a kernel.
void simulated_device::launch_host(stream s, host_work work) {
  if (!work) throw_invalid("launch_host without work");
  std::shared_ptr<stream_queue> queue;
  {
    std::lock_guard lock(state_->mutex);
    queue = state_->find(s).queue;
  }
  queue->push(std::move(work));
}

// cudaMemGetInfo: the capacity less what allocations and the pool hold.
memory_info simulated_device::memory() {
  std::lock_guard lock(state_->mutex);
  return memory_info{state_->config.capacity - state_->used, state_->config.capacity};
}

// Arm the nth-call failure.
void simulated_device::fail_nth_allocation(std::size_t n) {
  std::lock_guard lock(state_->mutex);
  state_->fail_countdown = n;
}

// Every allocation call fails while on.
void simulated_device::set_out_of_memory(bool on) {
  std::lock_guard lock(state_->mutex);
  state_->out_of_memory = on;
}

residency simulated_device::managed_residency(const void* p) {
  return state_->managed->at(p);
}

managed_statistics simulated_device::managed_stats() {
  return state_->managed->statistics();
}

// For tests of the release threshold and trim.
std::size_t simulated_device::pool_cached_bytes() {
  std::lock_guard lock(state_->mutex);
  return state_->pool_cached;
}

const simulated_config& simulated_device::config() const noexcept {
  return state_->config;
}

}  // namespace strata::gpu
