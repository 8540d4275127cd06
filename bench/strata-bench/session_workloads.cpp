// Seed 003 (NexusFix SessionHeap), baselines: the process's malloc and std::pmr resources
// serving 256-byte messages in bursts, single allocations, frees, cleanup and overflow.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <string>
#include <thread>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "spsc_ring.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t message_bytes = 256;
constexpr std::size_t session_buffer_bytes = 64u << 20;

// A 64 MB buffer from malloc with a monotonic resource over it and no upstream (the
// seed's strategy A: overflow would throw).
struct monotonic_session {
  std::unique_ptr<char[]> buffer{new char[session_buffer_bytes]};
  std::pmr::monotonic_buffer_resource resource{buffer.get(), session_buffer_bytes,
                                               std::pmr::null_memory_resource()};
};

// Per-message nanoseconds of one burst of `count` malloc(256) calls (frees not timed).
double malloc_burst_ns(std::vector<void*>& blocks, int count) {
  const double start = monotonic_ns();
  for (int i = 0; i < count; ++i) {
    blocks[i] = std::malloc(message_bytes);
    escape(blocks[i]);
  }
  const double per_message = (monotonic_ns() - start) / count;
  for (int i = 0; i < count; ++i) std::free(blocks[i]);
  return per_message;
}

// Per-message nanoseconds of one burst from the monotonic session (release not timed).
double monotonic_burst_ns(monotonic_session& session, int count) {
  const double start = monotonic_ns();
  for (int i = 0; i < count; ++i) escape(session.resource.allocate(message_bytes, 8));
  const double per_message = (monotonic_ns() - start) / count;
  session.resource.release();
  return per_message;
}

}  // namespace

// Bursts of 100 to 10,000 messages; each burst's time divided by its message count is
// one sample, and P50/P99 are taken over the bursts.
void session_bursts(const run_settings& settings, recorder& out) {
  const int bursts_per_round = settings.full ? 200 : 30;
  std::vector<void*> blocks(10'000);
  monotonic_session session;
  run_rounds(settings, [&](bool measured) {
    for (int count : {100, 500, 1000, 5000, 10'000}) {
      const std::string suffix = ", " + std::to_string(count) + " msgs";
      for (int burst = 0; burst < bursts_per_round; ++burst) {
        const double heap_ns = malloc_burst_ns(blocks, count);
        const double bump_ns = monotonic_burst_ns(session, count);
        if (!measured) continue;
        out.latency("malloc" + suffix).push_back(heap_ns);
        out.latency("pmr::monotonic (64 MB buffer)" + suffix).push_back(bump_ns);
      }
    }
  });
}

// One malloc(256) timed alone with the cycle counter (its free is not timed), and the
// same from the monotonic session.
void session_single_allocation(const run_settings& settings, recorder& out) {
  const int iterations = settings.full ? 100'000 : 20'000;
  monotonic_session session;
  run_rounds(settings, [&](bool measured) {
    std::vector<double>& heap = out.latency("malloc 256 B");
    std::vector<double>& bump = out.latency("pmr::monotonic 256 B");
    for (int i = 0; i < iterations; ++i) {
      std::uint64_t start = cycle_stamp();
      void* block = std::malloc(message_bytes);
      std::uint64_t ticks = cycle_stamp() - start;
      escape(block);
      std::free(block);
      if (measured) heap.push_back(ticks_to_ns(ticks));
      start = cycle_stamp();
      void* bumped = session.resource.allocate(message_bytes, 8);
      ticks = cycle_stamp() - start;
      escape(bumped);
      if (measured) bump.push_back(ticks_to_ns(ticks));
    }
    session.resource.release();
  });
  out.fact("timer overhead subtracted (ns)", cycle_clock().empty_measurement_ns);
}

// free(256 B) timed alone: on the allocating thread, and on another thread that receives
// the blocks through a queue (cross-thread free).
void session_free_latency(const run_settings& settings, recorder& out) {
  const int messages = settings.full ? 100'000 : 20'000;
  std::vector<void*> blocks(1000);
  run_rounds(settings, [&](bool measured) {
    std::vector<double>& local = out.latency("free on the allocating thread");
    for (int done = 0; done < messages; done += 1000) {
      for (auto& block : blocks) block = std::malloc(message_bytes);
      for (void* block : blocks) {
        const std::uint64_t start = cycle_stamp();
        std::free(block);
        const std::uint64_t ticks = cycle_stamp() - start;
        if (measured) local.push_back(ticks_to_ns(ticks));
      }
    }
    auto ring = std::make_unique<spsc_ring<1024>>();
    std::vector<double>& remote = out.latency("free on another thread");
    run_thread_team(2, [&](int index) {
      for (int i = 0; i < messages; ++i) {
        if (index == 0) {
          ring->push(std::malloc(message_bytes));
          continue;
        }
        void* block = ring->pop();
        const std::uint64_t start = cycle_stamp();
        std::free(block);
        const std::uint64_t ticks = cycle_stamp() - start;
        if (measured) remote.push_back(ticks_to_ns(ticks));
      }
    });
  });
}

// One thread allocates 256-byte messages and passes them to a second thread, which
// frees them; records messages per second through the pair.
void session_producer_consumer(const run_settings& settings, recorder& out) {
  const int messages = settings.full ? 2'000'000 : 300'000;
  run_rounds(settings, [&](bool measured) {
    auto ring = std::make_unique<spsc_ring<1024>>();
    const double wall = run_thread_team(2, [&](int index) {
      for (int i = 0; i < messages; ++i) {
        if (index == 0) {
          void* block = std::malloc(message_bytes);
          static_cast<char*>(block)[0] = 1;
          ring->push(block);
        } else {
          std::free(ring->pop());
        }
      }
    });
    if (!measured) return;
    out.add("1 producer -> 1 consumer", "messages/s", messages / (wall / 1e9), better::higher);
  });
}

// Cleanup after 1,000 messages of 256 B: freeing each with free(), release() of the
// monotonic session, and release() of a std::pmr::unsynchronized_pool_resource.
void session_cleanup(const run_settings& settings, recorder& out) {
  constexpr int count = 1000;
  const int cleanups = settings.full ? 1000 : 200;
  std::vector<void*> blocks(count);
  monotonic_session session;
  std::pmr::unsynchronized_pool_resource pool;
  run_rounds(settings, [&](bool measured) {
    for (int cleanup = 0; cleanup < cleanups; ++cleanup) {
      for (auto& block : blocks) block = std::malloc(message_bytes);
      double start = monotonic_ns();
      for (void* block : blocks) std::free(block);
      const double free_all = monotonic_ns() - start;

      for (int i = 0; i < count; ++i) escape(session.resource.allocate(message_bytes, 8));
      start = monotonic_ns();
      session.resource.release();
      const double release_monotonic = monotonic_ns() - start;

      for (int i = 0; i < count; ++i) escape(pool.allocate(message_bytes, 8));
      start = monotonic_ns();
      pool.release();
      const double release_pool = monotonic_ns() - start;
      if (!measured) continue;
      out.latency("free() x 1,000").push_back(free_all);
      out.latency("pmr::monotonic release()").push_back(release_monotonic);
      out.latency("pmr::unsynchronized_pool release()").push_back(release_pool);
    }
  });
}

// 100 messages into a std::pmr::monotonic_buffer_resource with a 4 KB initial buffer
// and the process's operator new as upstream (the SessionHeap overflow shape).
void session_overflow(const run_settings& settings, recorder& out) {
  constexpr int count = 100;
  const int bursts = settings.full ? 1000 : 300;
  alignas(64) static char initial[4096];
  run_rounds(settings, [&](bool measured) {
    std::vector<double> totals;
    for (int burst = 0; burst < bursts; ++burst) {
      std::pmr::monotonic_buffer_resource resource(initial, sizeof initial,
                                                   std::pmr::new_delete_resource());
      const double start = monotonic_ns();
      for (int i = 0; i < count; ++i) escape(resource.allocate(message_bytes, 8));
      totals.push_back(monotonic_ns() - start);
    }
    if (!measured) return;
    auto& latency = out.latency("pmr::monotonic 4 KB + upstream, 100 msgs (total)");
    latency.insert(latency.end(), totals.begin(), totals.end());
    std::sort(totals.begin(), totals.end());
    out.add("per message (median burst / 100)", "ns", totals[totals.size() / 2] / count);
  });
}

}  // namespace strata_bench
