// The simulated system: what spans devices, threads and calls.
#include "system_state.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace strata::gpu {

using simulated::capture_record;
using simulated::device_state;
using simulated::frontier;
using simulated::stream_entry;
using simulated::stream_kind;
using simulated::stream_queue;

namespace simulated {

// The address-only range is twice the capacity: freed memory is held back
// while queued work may touch it, and the capacity must stay usable meanwhile.
device_state::device_state(int number, const simulated_config& c)
    : ordinal(number), config(c), vm(c.vm_granularity, c.backing == memory_backing::host) {
  managed.emplace(config.managed);
  if (config.backing == memory_backing::address_only) space.emplace(2 * config.capacity);
}

void* device_state::take(std::size_t bytes) {
  if (bytes > config.capacity - used) return nullptr;
  void* p = space ? space->take(bytes) : std::aligned_alloc(config.granularity, bytes);
  if (p != nullptr) used += bytes;
  return p;
}

void device_state::release_backing(void* p, std::size_t bytes) {
  if (space)
    space->give_back(p, bytes);
  else
    std::free(p);
}

}  // namespace simulated

simulated_system::state::state(int device_count, const simulated_config& config)
    : policy(config.on_violation) {
  for (int i = 0; i < device_count; ++i) {
    devices.push_back(std::make_unique<device_state>(i, config));
    devices.back()->legacy = make_stream(i, stream_kind::legacy);
  }
}

// Streams first (their work may still touch memory), then every block still held.
simulated_system::state::~state() {
  graphs.clear();
  events.clear();
  streams.clear();
  for (auto& d : devices) {
    d->legacy.reset();
    d->per_thread.clear();
    d->retiring.clear();
  }
  for (auto& d : devices) {
    reap(*d, true);
    if (!d->space) {
      for (auto& [p, bytes] : d->live) std::free(p);
      for (auto& [p, bytes] : d->pool_live) std::free(p);
      for (auto& [bytes, block] : d->pool_free) std::free(block.p);
    }
    for (auto& [p, bytes] : d->pinned) std::free(p);
  }
}

void simulated_system::state::enter(const char* call) {
  if (simulated::host_function_thread::inside())
    throw device_error(
        errc::invalid_argument,
        std::string(call) + " from a host function (CUDA forbids device calls there)");
}

// cudaStreamCaptureMode: a thread in global mode may not make unsafe calls
// while any thread captures in global mode; a thread capturing (not relaxed)
// may not make them itself; relaxed threads may always.
void simulated_system::state::check_capture_safe(const char* call) {
  const auto me = std::this_thread::get_id();
  const auto mode_it = thread_modes.find(me);
  const capture_mode mine = mode_it == thread_modes.end() ? capture_mode::global : mode_it->second;
  if (mine == capture_mode::relaxed || captures.empty()) return;
  const std::string why = std::string(call) + " while a stream is capturing";
  bool refused = false;
  for (const auto& c : captures) {
    const bool own = c->thread == me && c->mode != capture_mode::relaxed;
    const bool global = mine == capture_mode::global && c->mode == capture_mode::global;
    if (own || global) {
      invalidate(*c, why);
      refused = true;
    }
  }
  if (refused) throw_capture(why + " (cudaErrorStreamCaptureUnsupported)");
}

void simulated_system::state::invalidate(capture_record& capture, const std::string& why) {
  if (capture.invalidated.empty()) capture.invalidated = why;
}

void simulated_system::state::throw_capture(const std::string& what) {
  throw device_error(errc::capture, what);
}

// The null and legacy handles name the device's legacy stream, the per-thread
// handle the caller's own stream (made on first use), any other a live stream
// this system made on this device.
stream_entry& simulated_system::state::resolve(device_state& d, stream s, const char* call) {
  if (s.is_legacy()) return *d.legacy;
  if (s.is_per_thread()) {
    auto& slot = d.per_thread[std::this_thread::get_id()];
    if (!slot) slot = make_stream(d.ordinal, stream_kind::per_thread);
    return *slot;
  }
  stream_entry* entry = streams.find(s.handle);
  if (entry == nullptr)
    throw device_error(errc::invalid_argument,
                       std::string(call) +
                           ": unknown or destroyed stream handle (cudaErrorInvalidResourceHandle)");
  if (entry->device != d.ordinal)
    throw device_error(errc::invalid_argument,
                       std::string(call) + ": the stream belongs to device " +
                           std::to_string(entry->device) + ", not " + std::to_string(d.ordinal));
  return *entry;
}

std::unique_ptr<stream_entry> simulated_system::state::make_stream(int device, stream_kind kind) {
  auto s = std::make_unique<stream_entry>();
  s->device = device;
  s->kind = kind;
  s->queue = std::make_shared<stream_queue>(next_stream_id++);
  return s;
}

namespace {

// `into` now comes after everything `from` is known to come after.
void merge(simulated::stream_clock& into, const simulated::stream_clock& from) {
  for (const auto& [id, position] : from) {
    std::uint64_t& known = into[id];
    if (known < position) known = position;
  }
}

// Make `s` wait, on the device, for what `other` has queued so far.
void follow(stream_entry& s, stream_entry& other) {
  const std::uint64_t last = other.queue->last_position();
  std::uint64_t& known = s.known[other.queue->id()];
  if (last == 0 || known >= last) return;
  merge(s.known, other.known);
  s.known[other.queue->id()] = last;
  if (other.queue->reached(last)) return;
  s.queue->push([queue = std::weak_ptr<stream_queue>(other.queue), last] {
    if (const auto q = queue.lock()) q->wait_for(last);
  });
}

}  // namespace

// Work on the legacy stream waits for the per-thread streams' earlier work,
// and work on a per-thread stream for the legacy stream's (CUDA's implicit
// synchronisation of blocking streams); created streams are non-blocking.
void simulated_system::state::enqueue(device_state& d, stream_entry& s, std::function<void()> item,
                                      const char* call) {
  if (s.capture) {
    if (!s.capture->invalidated.empty())
      throw_capture(std::string(call) + ": the stream's capture was invalidated by " +
                    s.capture->invalidated + " (cudaErrorStreamCaptureInvalidated)");
    s.capture->work.push_back(std::move(item));
    return;
  }
  if (s.kind == stream_kind::legacy) {
    for (auto& [thread, other] : d.per_thread) {
      if (other->capture) {
        invalidate(*other->capture, std::string(call) + " on the legacy stream");
        throw_capture(std::string(call) +
                      " on the legacy stream, which would wait for a capturing stream "
                      "(cudaErrorStreamCaptureImplicit)");
      }
      follow(s, *other);
    }
  } else if (s.kind == stream_kind::per_thread) {
    follow(s, *d.legacy);
  }
  s.queue->push(std::move(item));
}

// The one way work reaches a stream from a device call: checked, under the lock.
void simulated_system::state::queue(device_state& d, stream s, std::function<void()> item,
                                    const char* call) {
  enter(call);
  std::lock_guard lock(mutex);
  enqueue(d, resolve(d, s, call), std::move(item), call);
}

frontier simulated_system::state::everything_queued(device_state& d) {
  frontier f;
  const auto add = [&f](const std::shared_ptr<stream_queue>& q) {
    f.push_back({q, q->last_position()});
  };
  add(d.legacy->queue);
  for (auto& [thread, s] : d.per_thread) add(s->queue);
  streams.for_each([&](const stream_entry& s) {
    if (s.device == d.ordinal) add(s.queue);
  });
  for (auto& q : d.retiring) add(q);
  return f;
}

bool simulated_system::state::capturing_on(const device_state& d) const {
  bool found = d.legacy->capture != nullptr;
  for (const auto& [thread, s] : d.per_thread) found = found || s->capture != nullptr;
  streams.for_each([&](const stream_entry& s) {
    found = found || (s.device == d.ordinal && s.capture != nullptr);
  });
  return found;
}

// Also lets go of destroyed streams whose work has all run.
void simulated_system::state::reap(device_state& d, bool everything) {
  if (!d.freed.empty())
    for (const std::string& overwritten : d.freed.reap(everything)) report(overwritten);
  std::erase_if(d.retiring, [](const std::shared_ptr<stream_queue>& q) {
    return q->reached(q->last_position());
  });
}

void simulated_system::state::report(const std::string& what) {
  if (policy == violation_policy::abort) {
    std::fprintf(stderr, "strata gpu simulator: %s\n", what.c_str());
    std::abort();
  }
  std::lock_guard lock(violations_mutex);
  violations.push_back(what);
}

void simulated_system::state::rethrow_host_error(device_state& d) {
  std::string error;
  {
    std::lock_guard lock(d.host_error_mutex);
    error.swap(d.host_error);
  }
  if (!error.empty()) throw device_error(errc::backend, error);
}

simulated_system::simulated_system(int devices, simulated_config config)
    : state_(std::make_unique<state>(devices, config)) {
  if (devices < 1) throw device_error(errc::invalid_argument, "a system needs a device");
  for (int i = 0; i < devices; ++i)
    devices_.push_back(std::unique_ptr<simulated_device>(new simulated_device(*this, i)));
}

simulated_system::~simulated_system() = default;

int simulated_system::device_count() const noexcept {
  return static_cast<int>(devices_.size());
}

simulated_device& simulated_system::gpu(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count())
    throw device_error(errc::no_device, "no simulated device " + std::to_string(ordinal));
  return *devices_[static_cast<std::size_t>(ordinal)];
}

int simulated_system::current_device() {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->current.find(std::this_thread::get_id());
  return it == state_->current.end() ? 0 : it->second;
}

void simulated_system::set_current_device(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count())
    throw device_error(errc::invalid_argument, "cudaSetDevice(" + std::to_string(ordinal) +
                                                   "): no such device (cudaErrorInvalidDevice)");
  std::lock_guard lock(state_->mutex);
  state_->current[std::this_thread::get_id()] = ordinal;
}

capture_mode simulated_system::exchange_capture_mode(capture_mode mode) {
  std::lock_guard lock(state_->mutex);
  auto [it, fresh] = state_->thread_modes.try_emplace(std::this_thread::get_id(), mode);
  if (fresh) return capture_mode::global;
  return std::exchange(it->second, mode);
}

std::vector<std::string> simulated_system::violations() {
  std::lock_guard lock(state_->violations_mutex);
  return state_->violations;
}

}  // namespace strata::gpu
