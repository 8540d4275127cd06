// The simulated system's state behind its one mutex: the devices with their
// memory and default streams, the handle tables, each host thread's current
// device and capture mode, and the captures under way. simulated_system.cpp
// holds the rules that span calls (stream resolution, implicit
// synchronisation, capture restrictions, violations); simulated_memory.cpp
// and simulated_streams.cpp the device calls themselves.
#ifndef STRATA_GPU_SIMULATED_SYSTEM_STATE_HPP
#define STRATA_GPU_SIMULATED_SYSTEM_STATE_HPP

#include <strata/gpu/simulated.hpp>

#include "address_space.hpp"
#include "handle_table.hpp"
#include "host_functions.hpp"
#include "managed_memory.hpp"
#include "quarantine.hpp"
#include "stream_queue.hpp"
#include "virtual_memory.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace strata::gpu::simulated {

// For each stream id, the position of that stream a stream or event is known
// to come after (through the events it waited on): a vector clock.
using stream_clock = std::unordered_map<std::uint64_t, std::uint64_t>;

enum class stream_kind { legacy, per_thread, created };

// A capture sequence: the work recorded so far, and what invalidated it.
struct capture_record {
  std::uint64_t id;
  capture_mode mode;
  std::thread::id thread;
  std::string invalidated;  // empty while the capture is valid
  std::vector<std::function<void()>> work;
};

struct stream_entry {
  int device;
  stream_kind kind;
  std::shared_ptr<stream_queue> queue;  // its id is the stream_id
  stream_clock known;
  std::shared_ptr<capture_record> capture;  // while capturing (begun here or joined)
  bool origin = false;                      // the capture was begun on this stream
};

struct event_entry {
  int device;
  event_timing timing;
  std::weak_ptr<stream_queue> queue;  // expired or null: complete
  std::uint64_t position = 0;
  stream_clock clock;
  // When the stream reached the record, in steady_clock nanoseconds (timing events; -1 before).
  std::shared_ptr<std::atomic<std::int64_t>> reached_at;
  std::shared_ptr<capture_record> captured;  // recorded inside this capture
};

struct graph_entry {
  int device;
  std::vector<std::function<void()>> work;
  // Where its latest launch ends: a launch runs after the one before, on any stream.
  std::weak_ptr<stream_queue> last_queue;
  std::uint64_t last_position = 0;
};

// Stream-ordered memory freed at `position` of stream `stream_id`, cached by the pool.
struct cached_block {
  void* p;
  std::uint64_t stream_id;
  std::weak_ptr<stream_queue> queue;
  std::uint64_t position;
};

struct device_state {
  int ordinal;
  simulated_config config;
  std::optional<address_space> space;                // address-only backing
  std::size_t used = 0;                              // bytes taken from the capacity
  std::unordered_map<void*, std::size_t> live;       // synchronous allocations
  std::unordered_map<void*, std::size_t> pool_live;  // stream-ordered, handed out
  std::multimap<std::size_t, cached_block> pool_free;
  std::size_t pool_cached = 0;
  std::size_t release_threshold = 0;
  std::unordered_map<void*, std::size_t> pinned;
  std::optional<managed_memory> managed;
  std::unique_ptr<stream_entry> legacy;
  std::map<std::thread::id, std::unique_ptr<stream_entry>> per_thread;
  std::vector<std::shared_ptr<stream_queue>> retiring;  // destroyed, work still queued
  quarantine freed;
  virtual_memory vm;
  std::size_t fail_countdown = 0;
  bool out_of_memory = false;
  std::mutex host_error_mutex;
  std::string host_error;  // the first exception a host function let out

  device_state(int number, const simulated_config& c);

  // Whether the backing has bytes behind `p` (host-backed, not address-only).
  bool has_bytes(const void* p) const {
    if (vm.contains(p)) return !space;
    return !space || !space->contains(p);
  }
  // Take `bytes` (already rounded) from the capacity and the backing; null when it does not fit.
  void* take(std::size_t bytes);
  // Return memory to the backing (the capacity was returned at the free).
  void release_backing(void* p, std::size_t bytes);
  // Give completed cached stream-ordered blocks back until at most `keep` bytes stay cached.
  void release_cached(std::size_t keep);
};

}  // namespace strata::gpu::simulated

namespace strata::gpu {

struct simulated_system::state {
  // First, so it is gone last: streams being torn down may still run host functions.
  simulated::host_function_thread host_functions;
  std::mutex mutex;
  violation_policy policy;
  std::mutex violations_mutex;
  std::vector<std::string> violations;
  std::vector<std::unique_ptr<simulated::device_state>> devices;
  simulated::handle_table<simulated::stream_entry> streams{0x51000000};
  simulated::handle_table<simulated::event_entry> events{0xE1000000};
  simulated::handle_table<simulated::graph_entry> graphs{0x61000000};
  std::map<std::thread::id, int> current;
  std::map<std::thread::id, capture_mode> thread_modes;
  std::vector<std::shared_ptr<simulated::capture_record>> captures;
  std::uint64_t next_stream_id = 1;
  std::uint64_t next_capture_id = 1;

  state(int device_count, const simulated_config& config);
  ~state();

  // ---- calls --------------------------------------------------------------------
  // Every device call starts here: none may come from a host function.
  static void enter(const char* call);
  // A call CUDA deems unsafe during capture: refused (and the capture that
  // forbids it invalidated) under the calling thread's and the captures' modes.
  void check_capture_safe(const char* call);
  // Stop a capture: its end_capture will fail with `why`.
  static void invalidate(simulated::capture_record& capture, const std::string& why);
  [[noreturn]] static void throw_capture(const std::string& what);

  // ---- streams --------------------------------------------------------------------
  // The stream a handle names on device `d` for the calling thread.
  simulated::stream_entry& resolve(simulated::device_state& d, stream s, const char* call);
  std::unique_ptr<simulated::stream_entry> make_stream(int device, simulated::stream_kind kind);
  // Queue `item` on `s` (or record it into the capture), after the implicit
  // synchronisation between the legacy and the per-thread default streams.
  void enqueue(simulated::device_state& d, simulated::stream_entry& s, std::function<void()> item,
               const char* call);
  // A device call that queues work: `item` on stream `s` of `d`, as enqueue does.
  void queue(simulated::device_state& d, stream s, std::function<void()> item, const char* call);
  // Every stream of `d` and the position that is "everything queued so far".
  simulated::frontier everything_queued(simulated::device_state& d);
  // Whether a capture is recording work of device `d`.
  bool capturing_on(const simulated::device_state& d) const;

  // ---- after the device's work ---------------------------------------------------
  // Release freed memory every stream has passed, and report overwritten poison.
  void reap(simulated::device_state& d, bool everything);
  // A violation: one line and abort, or kept for violations().
  void report(const std::string& what);
  // The exception a host function let out, as a device_error, once.
  void rethrow_host_error(simulated::device_state& d);
};

}  // namespace strata::gpu

#endif
