// 003_'s session bursts: per-message P50 and P99 for bursts of 256-byte
// messages, session destroy, and the overflow path, against
// std::pmr::monotonic_buffer_resource, a mimalloc heap and the strata heap.
//
// For fine A/B work on the session heap only. strata-bench covers these measurements
// for the report, side by side with the seed's strategies in one worker: bursts in
// `session/session-heap`, single allocation and free in `session/session-heap-latency`,
// cleanup, overflow and 1/16/64 MiB destroy in `session/session-heap-lifetime`; quote those.
//
//   build/<dir>/bench/micro/bench-session_bench
#include <strata/strata.h>
#include <strata/session_heap.hpp>

#include <benchmark/benchmark.h>

#include "mimalloc_heap_api.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory_resource>
#include <vector>

namespace {

constexpr std::size_t message_bytes = 256;
using clock_type = std::chrono::steady_clock;

// Time bursts of state.range(0) allocations; report per-message P50 and P99.
// `allocate` serves one message; `after_burst` frees the burst, untimed.
template <class Allocate, class AfterBurst>
void time_bursts(benchmark::State& state, Allocate allocate, AfterBurst after_burst) {
  const auto burst = static_cast<std::size_t>(state.range(0));
  std::vector<void*> messages(burst);
  std::vector<double> per_message;
  for (auto _ : state) {
    auto start = clock_type::now();
    for (auto& m : messages) m = allocate();
    auto stop = clock_type::now();
    benchmark::DoNotOptimize(messages.data());
    double seconds = std::chrono::duration<double>(stop - start).count();
    state.SetIterationTime(seconds);
    per_message.push_back(seconds * 1e9 / static_cast<double>(burst));
    after_burst(messages);
  }
  std::sort(per_message.begin(), per_message.end());
  auto at = [&](double q) {
    return per_message[static_cast<std::size_t>(q * static_cast<double>(per_message.size() - 1))];
  };
  state.counters["p50_ns_per_msg"] = at(0.50);
  state.counters["p99_ns_per_msg"] = at(0.99);
}

void burst_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"burst"})->Arg(100)->Arg(500)->Arg(1000)->Arg(5000)->Arg(10000);
  b->UseManualTime()->Iterations(2000);
}

void session_burst(benchmark::State& state) {
  strata::session_heap session(64 << 20);
  time_bursts(
      state, [&] { return session.allocate(message_bytes, 8); },
      [&](std::vector<void*>&) { session.rewind_buffer(); });
}
BENCHMARK(session_burst)->Name("burst/strata_session_heap")->Apply(burst_args);

void pmr_monotonic_burst(benchmark::State& state) {
  std::vector<char> buffer(64 << 20);
  std::pmr::monotonic_buffer_resource pool(buffer.data(), buffer.size(),
                                           std::pmr::null_memory_resource());
  time_bursts(
      state, [&] { return pool.allocate(message_bytes, 8); },
      [&](std::vector<void*>&) { pool.release(); });
}
BENCHMARK(pmr_monotonic_burst)->Name("burst/pmr_monotonic")->Apply(burst_args);

void mimalloc_heap_burst(benchmark::State& state) {
  const auto& mi = mimalloc_heap_api::get();
  if (mi.heap_new == nullptr) return state.SkipWithError("libmimalloc.so.2 not found");
  mi_heap_t* heap = mi.heap_new();
  time_bursts(
      state, [&] { return mi.heap_malloc_aligned(heap, message_bytes, 8); },
      [&](std::vector<void*>& messages) {
        for (void* m : messages) mi.free(m);
      });
  mi.heap_destroy(heap);
}
BENCHMARK(mimalloc_heap_burst)->Name("burst/mimalloc_heap")->Apply(burst_args);

void strata_heap_burst(benchmark::State& state) {
  strata_heap_t* heap = strata_heap_new();
  time_bursts(
      state, [&] { return strata_heap_malloc(heap, message_bytes); },
      [&](std::vector<void*>& messages) {
        for (void* m : messages) strata_free(m);
      });
  strata_heap_destroy(heap);
}
BENCHMARK(strata_heap_burst)->Name("burst/strata_first_class_heap")->Apply(burst_args);

// ---- destroying a session that holds 64 MiB ---------------------------------

void session_destroy(benchmark::State& state) {
  const bool touched = state.range(0) != 0;
  for (auto _ : state) {
    strata::session_heap session(64 << 20);
    if (touched) {
      while (session.buffer_bytes_left() >= message_bytes)
        std::memset(session.allocate(message_bytes, 8), 1, message_bytes);
    }
    auto start = clock_type::now();
    session.destroy();
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - start).count());
  }
}
BENCHMARK(session_destroy)
    ->Name("destroy_64MiB/strata_session_heap")
    ->ArgNames({"touched"})
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(30)
    ->Unit(benchmark::kMicrosecond);

void mimalloc_destroy(benchmark::State& state) {
  const auto& mi = mimalloc_heap_api::get();
  if (mi.heap_new == nullptr) return state.SkipWithError("libmimalloc.so.2 not found");
  const bool touched = state.range(0) != 0;
  for (auto _ : state) {
    mi_heap_t* heap = mi.heap_new();
    void* buffer = mi.heap_malloc_aligned(heap, 64 << 20, 64);
    if (touched) std::memset(buffer, 1, 64 << 20);
    auto start = clock_type::now();
    mi.heap_destroy(heap);
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - start).count());
  }
}
BENCHMARK(mimalloc_destroy)
    ->Name("destroy_64MiB/mimalloc_heap")
    ->ArgNames({"touched"})
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(30)
    ->Unit(benchmark::kMicrosecond);

// ---- the overflow path against the heap's own malloc -----------------------

void session_overflow(benchmark::State& state) {
  strata::session_heap session(4096);
  while (session.buffer_bytes_left() >= message_bytes) (void)session.allocate(message_bytes, 8);
  for (auto _ : state) {
    void* p = session.allocate(message_bytes, 8);
    benchmark::DoNotOptimize(p);
    session.deallocate(p, message_bytes, 8);
  }
}
BENCHMARK(session_overflow)->Name("overflow_pair/strata_session_heap");

void heap_pair(benchmark::State& state) {
  strata_heap_t* heap = strata_heap_new();
  for (auto _ : state) {
    void* p = strata_heap_malloc(heap, message_bytes);
    benchmark::DoNotOptimize(p);
    strata_free(p);
  }
  strata_heap_destroy(heap);
}
BENCHMARK(heap_pair)->Name("overflow_pair/strata_heap_malloc+free");

}  // namespace
