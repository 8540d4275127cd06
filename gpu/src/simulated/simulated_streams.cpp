// The simulated device's streams, events, graph capture and queued work.
#include "latency.hpp"
#include "system_state.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace strata::gpu {

using simulated::capture_record;
using simulated::device_state;
using simulated::event_entry;
using simulated::graph_entry;
using simulated::stream_entry;
using simulated::stream_kind;
using simulated::stream_queue;

namespace {

[[noreturn]] void throw_invalid(const std::string& what) {
  throw device_error(errc::invalid_argument, what);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether a capture is still under way (its events refer to captured work).
bool active(const simulated_system::state& st, const std::shared_ptr<capture_record>& c) {
  return c && std::find(st.captures.begin(), st.captures.end(), c) != st.captures.end();
}

// An event last recorded in a capture marks captured work, not stream work:
// during the capture, asking for it invalidates the capture; after, it is
// CUDA's cudaErrorCapturedEvent until the event is recorded again.
void refuse_captured(simulated_system::state& st, const event_entry& marker, const char* call) {
  if (!marker.captured) return;
  if (active(st, marker.captured)) {
    st.invalidate(*marker.captured, std::string(call) + " of an event recorded in the capture");
    st.throw_capture(std::string(call) +
                     " of an event recorded in a capture (cudaErrorStreamCaptureUnsupported)");
  }
  st.throw_capture(std::string(call) +
                   " of an event last recorded in a capture (cudaErrorCapturedEvent)");
}

// The event a handle names on this system.
event_entry& find_event(simulated_system::state& st, event e, const char* call) {
  event_entry* entry = st.events.find(e.handle);
  if (entry == nullptr)
    throw_invalid(std::string(call) +
                  ": unknown or destroyed event handle (cudaErrorInvalidResourceHandle)");
  return *entry;
}

// A host function's exception, kept for the device's next synchronisation.
void keep_host_error(device_state& d, const std::string& message) {
  std::lock_guard lock(d.host_error_mutex);
  if (d.host_error.empty()) d.host_error = message;
}

// How reports name queued work.
std::string describe(const char* call, const void* p, std::size_t bytes) {
  char text[96];
  std::snprintf(text, sizeof text, "%s of %zu bytes at %p", call, bytes, p);
  return text;
}

}  // namespace

// cudaStreamCreateWithFlags(cudaStreamNonBlocking): a new queue with its own worker.
stream simulated_device::create_stream() {
  simulated_system::state::enter("create_stream");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  return stream{st.streams.add(st.make_stream(ordinal_, stream_kind::created))};
}

// cudaStreamDestroy: returns at once; the queue keeps running its work, and
// the handle is the next one create_stream hands out.
void simulated_device::destroy_stream(stream s) {
  simulated_system::state::enter("destroy_stream");
  if (s.is_legacy() || s.is_per_thread())
    throw_invalid("destroy_stream: a default stream cannot be destroyed");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  stream_entry& entry = st.resolve(d, s, "destroy_stream");
  if (entry.capture) throw_invalid("destroy_stream of a capturing stream");
  d.retiring.push_back(st.streams.remove(s.handle)->queue);
  st.reap(d, false);
}

// cudaStreamGetId.
stream_id simulated_device::identify(stream s) {
  simulated_system::state::enter("identify");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  return st.resolve(*st.devices[ordinal_], s, "identify").queue->id();
}

// cudaStreamSynchronize: wait outside the lock, then apply the release threshold.
void simulated_device::synchronize(stream s) {
  simulated_system::state::enter("synchronize(stream)");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::shared_ptr<stream_queue> queue;
  std::uint64_t position;
  {
    std::lock_guard lock(st.mutex);
    stream_entry& on = st.resolve(d, s, "synchronize(stream)");
    if (on.capture) {
      st.invalidate(*on.capture, "synchronize of the capturing stream");
      st.throw_capture("synchronize of a capturing stream (cudaErrorStreamCaptureUnsupported)");
    }
    st.check_capture_safe("synchronize(stream)");
    queue = on.queue;
    position = queue->last_position();
  }
  queue->wait_for(position);
  {
    std::lock_guard lock(st.mutex);
    st.reap(d, false);
    d.release_cached(d.release_threshold);
  }
  st.rethrow_host_error(d);
}

// cudaDeviceSynchronize: every stream reaches what was queued when the call began.
void simulated_device::synchronize() {
  simulated_system::state::enter("synchronize");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  simulated::frontier everything;
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("synchronize (cudaDeviceSynchronize)");
    if (st.capturing_on(d))
      st.throw_capture(
          "synchronize of a device with a capturing stream (cudaErrorStreamCaptureUnsupported)");
    everything = st.everything_queued(d);
  }
  for (auto& [queue, position] : everything) queue->wait_for(position);
  {
    std::lock_guard lock(st.mutex);
    st.reap(d, false);
    d.release_cached(d.release_threshold);
  }
  st.rethrow_host_error(d);
}

// cudaEventCreateWithFlags: a never-recorded event, complete.
event simulated_device::create_event(event_timing timing) {
  simulated_system::state::enter("create_event");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  auto e = std::make_unique<event_entry>();
  e->device = ordinal_;
  e->timing = timing;
  return event{st.events.add(std::move(e))};
}

// cudaEventDestroy: waits already queued keep their own copy of the record.
void simulated_device::destroy_event(event e) {
  simulated_system::state::enter("destroy_event");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  if (!st.events.remove(e.handle)) throw_invalid("destroy_event: unknown event");
}

// cudaEventRecord: the event stands for everything queued on the stream so far
// (for a default stream, after its implicit synchronisation, so a marker is
// queued), and carries what that stream is known to come after. Inside a
// capture, it marks a point of the captured work instead.
void simulated_device::record(event e, stream s) {
  simulated_system::state::enter("record");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  event_entry& marker = find_event(st, e, "record");
  stream_entry& on = st.resolve(d, s, "record");
  if (marker.device != ordinal_)
    throw_invalid("record: the event belongs to device " + std::to_string(marker.device) +
                  " (cudaErrorInvalidResourceHandle)");
  if (on.capture) {
    marker.captured = on.capture;
    marker.queue.reset();
    marker.position = 0;
    return;
  }
  marker.captured.reset();
  marker.reached_at.reset();
  if (marker.timing == event_timing::enabled) {
    auto stamp = std::make_shared<std::atomic<std::int64_t>>(-1);
    marker.reached_at = stamp;
    st.enqueue(
        d, on, [stamp] { stamp->store(now_ns()); }, "record");
  } else if (on.kind != stream_kind::created) {
    st.enqueue(
        d, on, [] {}, "record");
  }
  marker.queue = on.queue;
  marker.position = on.queue->last_position();
  marker.clock = on.known;
  marker.clock[on.queue->id()] = marker.position;
}

// cudaEventQuery: never blocks; an event of captured work cannot be queried.
bool simulated_device::query(event e) {
  simulated_system::state::enter("query");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  st.check_capture_safe("query (cudaEventQuery)");
  event_entry& marker = find_event(st, e, "query");
  refuse_captured(st, marker, "query");
  const auto q = marker.queue.lock();
  return !q || q->reached(marker.position);
}

// cudaEventSynchronize: wait outside the lock, then apply the release threshold.
void simulated_device::synchronize(event e) {
  simulated_system::state::enter("synchronize(event)");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::shared_ptr<stream_queue> queue;
  std::uint64_t position;
  {
    std::lock_guard lock(st.mutex);
    st.check_capture_safe("synchronize(event)");
    event_entry& marker = find_event(st, e, "synchronize(event)");
    refuse_captured(st, marker, "synchronize(event)");
    queue = marker.queue.lock();
    position = marker.position;
  }
  if (queue) queue->wait_for(position);
  {
    std::lock_guard lock(st.mutex);
    st.reap(d, false);
    d.release_cached(d.release_threshold);
  }
  st.rethrow_host_error(d);
}

// cudaStreamWaitEvent: the stream's worker, not the host, blocks on the event;
// the stream now comes after everything the event came after. A stream that
// waits on an event of a capture joins that capture; a capturing stream may
// not wait on work outside its capture.
void simulated_device::wait(stream s, event e) {
  simulated_system::state::enter("wait");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  const event_entry& marker = find_event(st, e, "wait");
  stream_entry& on = st.resolve(d, s, "wait");
  if (active(st, marker.captured)) {
    if (on.capture == marker.captured) return;
    if (on.capture) st.throw_capture("wait on an event of another capture");
    on.capture = marker.captured;
    on.origin = false;
    return;
  }
  refuse_captured(st, marker, "wait");
  if (on.capture) {
    st.invalidate(*on.capture, "a wait on an event recorded outside the capture");
    st.throw_capture(
        "wait of a capturing stream on an event recorded outside the capture "
        "(cudaErrorStreamCaptureIsolation)");
  }
  for (const auto& [id, position] : marker.clock) {
    std::uint64_t& known = on.known[id];
    if (known < position) known = position;
  }
  const auto q = marker.queue.lock();
  if (marker.position == 0 || !q || q->reached(marker.position)) return;
  st.enqueue(
      d, on,
      [queue = marker.queue, position = marker.position] {
        if (const auto q = queue.lock()) q->wait_for(position);
      },
      "wait");
}

// cudaEventElapsedTime: both events must measure time and have completed.
std::chrono::nanoseconds simulated_device::elapsed(event start, event end) {
  simulated_system::state::enter("elapsed");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  const event_entry& from = find_event(st, start, "elapsed");
  const event_entry& to = find_event(st, end, "elapsed");
  if (from.timing != event_timing::enabled || to.timing != event_timing::enabled)
    throw_invalid("elapsed: an event was created without timing (cudaErrorInvalidResourceHandle)");
  if (!from.reached_at || !to.reached_at)
    throw_invalid("elapsed: an event was never recorded (cudaErrorInvalidResourceHandle)");
  const std::int64_t a = from.reached_at->load();
  const std::int64_t b = to.reached_at->load();
  if (a < 0 || b < 0)
    throw device_error(errc::not_ready, "elapsed: an event has not completed (cudaErrorNotReady)");
  return std::chrono::nanoseconds(b - a);
}

// cudaStreamBeginCapture: later work on the stream is recorded, not run.
void simulated_device::begin_capture(stream s, capture_mode mode) {
  simulated_system::state::enter("begin_capture");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  stream_entry& on = st.resolve(*st.devices[ordinal_], s, "begin_capture");
  if (on.kind == stream_kind::legacy)
    throw_invalid("begin_capture on the legacy stream (cudaErrorStreamCaptureUnsupported)");
  if (on.capture) throw_invalid("begin_capture on a stream that is already capturing");
  auto record = std::make_shared<capture_record>();
  record->id = st.next_capture_id++;
  record->mode = mode;
  record->thread = std::this_thread::get_id();
  on.capture = record;
  on.origin = true;
  st.captures.push_back(std::move(record));
}

// cudaStreamEndCapture + cudaGraphInstantiate: every stream leaves the capture.
graph simulated_device::end_capture(stream s) {
  simulated_system::state::enter("end_capture");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  stream_entry& on = st.resolve(*st.devices[ordinal_], s, "end_capture");
  if (!on.capture || !on.origin)
    throw_invalid(
        "end_capture on a stream that did not begin a capture "
        "(cudaErrorStreamCaptureUnmatched)");
  const std::shared_ptr<capture_record> record = on.capture;
  if (record->mode != capture_mode::relaxed && record->thread != std::this_thread::get_id())
    st.throw_capture(
        "end_capture from another thread than begin_capture "
        "(cudaErrorStreamCaptureWrongThread)");
  std::erase(st.captures, record);
  const auto leave = [&record](stream_entry& s) {
    if (s.capture == record) {
      s.capture.reset();
      s.origin = false;
    }
  };
  for (auto& d : st.devices) {
    leave(*d->legacy);
    for (auto& [thread, p] : d->per_thread) leave(*p);
  }
  st.streams.for_each([&](const stream_entry& s) { leave(const_cast<stream_entry&>(s)); });
  if (!record->invalidated.empty())
    st.throw_capture("end_capture: the capture was invalidated by " + record->invalidated +
                     " (cudaErrorStreamCaptureInvalidated)");
  auto g = std::make_unique<graph_entry>();
  g->device = ordinal_;
  g->work = std::move(record->work);
  return graph{st.graphs.add(std::move(g))};
}

// cudaStreamIsCapturing.
capture_status simulated_device::capture_state(stream s) {
  simulated_system::state::enter("capture_state");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  const stream_entry& on = st.resolve(*st.devices[ordinal_], s, "capture_state");
  if (!on.capture) return capture_status::none;
  return on.capture->invalidated.empty() ? capture_status::active : capture_status::invalidated;
}

// cudaGraphLaunch: the captured work, in its order, on `s`, after the
// graph's previous launch (CUDA never runs one executable graph twice at once).
void simulated_device::launch(graph g, stream s) {
  simulated_system::state::enter("launch");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  std::lock_guard lock(st.mutex);
  graph_entry* entry = st.graphs.find(g.handle);
  if (entry == nullptr || entry->device != ordinal_) throw_invalid("launch of an unknown graph");
  stream_entry& on = st.resolve(d, s, "launch");
  const auto previous = entry->last_queue.lock();
  if (previous && previous != on.queue && !previous->reached(entry->last_position))
    st.enqueue(
        d, on,
        [queue = entry->last_queue, position = entry->last_position] {
          if (const auto q = queue.lock()) q->wait_for(position);
        },
        "launch");
  for (const auto& item : entry->work) st.enqueue(d, on, item, "launch");
  if (on.capture) return;
  entry->last_queue = on.queue;
  entry->last_position = on.queue->last_position();
}

// cudaGraphExecDestroy: launches already queued keep their copies of the work.
void simulated_device::destroy_graph(graph g) {
  simulated_system::state::enter("destroy_graph");
  auto& st = shared();
  std::lock_guard lock(st.mutex);
  if (!st.graphs.remove(g.handle)) throw_invalid("destroy_graph of an unknown graph");
}

// cudaMemcpyAsync: a memcpy in stream order; address-only memory has nothing to
// copy. Managed memory on the side the kind names the device's is a device
// touch. Memory freed before the copy runs, or reserved memory not mapped
// and accessible when it runs, is a violation.
void simulated_device::copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind,
                                  stream s) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr) throw_invalid("copy_async with a null pointer");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  const bool moves_bytes = d.has_bytes(dst) && d.has_bytes(src);
  const memory_location reader =
      kind == copy_kind::host_to_device ? memory_location::host : memory_location::device;
  const memory_location writer =
      kind == copy_kind::device_to_host ? memory_location::host : memory_location::device;
  st.queue(
      d, s,
      [&st, &d, dst, src, bytes, reader, writer, moves_bytes] {
        for (const void* end : {static_cast<const void*>(dst), src}) {
          if (const auto freed = d.freed.overlapping(end, bytes)) {
            st.report(describe("copy_async", end, bytes) + " ran after " + *freed);
            return;
          }
        }
        simulated::spend(d.managed->touch(src, bytes, reader, false) +
                         d.managed->touch(dst, bytes, writer, true));
        const auto refused = d.vm.touch(dst, src, bytes, [&] {
          if (moves_bytes) std::memcpy(dst, src, bytes);
        });
        if (refused) st.report(describe("copy_async", dst, bytes) + ": " + *refused);
      },
      "copy_async");
}

// cudaMemsetAsync: a device write in stream order.
void simulated_device::memset_async(void* p, int value, std::size_t bytes, stream s) {
  if (bytes == 0) return;
  if (p == nullptr) throw_invalid("memset_async of a null pointer");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  const bool writes_bytes = d.has_bytes(p);
  st.queue(
      d, s,
      [&st, &d, p, value, bytes, writes_bytes] {
        if (const auto freed = d.freed.overlapping(p, bytes)) {
          st.report(describe("memset_async", p, bytes) + " ran after " + *freed);
          return;
        }
        simulated::spend(d.managed->touch(p, bytes, memory_location::device, true));
        const auto refused = d.vm.touch(p, nullptr, bytes, [&] {
          if (writes_bytes) std::memset(p, value, bytes);
        });
        if (refused) st.report(describe("memset_async", p, bytes) + ": " + *refused);
      },
      "memset_async");
}

// cudaLaunchHostFunc: the stream hands the work to the one host-function thread.
void simulated_device::launch_host(stream s, host_work work) {
  if (!work) throw_invalid("launch_host without work");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  st.queue(
      d, s,
      [&st, &d, work = std::move(work)] {
        const simulated::host_function_thread::error_sink keep = [&d](const std::string& message) {
          keep_host_error(d, message);
        };
        st.host_functions.run(work, keep);
      },
      "launch_host");
}

// A kernel's stand-in, run by the stream itself; a throw is the device's
// asynchronous error, reported at the next synchronisation.
void simulated_device::launch_kernel(stream s, host_work work) {
  if (!work) throw_invalid("launch_kernel without work");
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  st.queue(
      d, s,
      [&d, work = std::move(work)] {
        try {
          work();
        } catch (const std::exception& e) {
          keep_host_error(d, std::string("a kernel failed: ") + e.what());
        }
      },
      "launch_kernel");
}

// cudaMemPrefetchAsync: the pages move when the stream reaches the prefetch,
// and the stream spends the migration time.
void simulated_device::prefetch_async(const void* p, std::size_t bytes, memory_location to,
                                      stream s) {
  if (bytes == 0) return;
  auto& st = shared();
  device_state& d = *st.devices[ordinal_];
  if (!d.managed->contains(p, bytes))
    throw_invalid("prefetch_async of memory not from allocate_managed");
  st.queue(
      d, s, [&d, p, bytes, to] { simulated::spend(d.managed->prefetch(p, bytes, to)); },
      "prefetch_async");
}

}  // namespace strata::gpu
