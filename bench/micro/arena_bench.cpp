// Monotonic arena and frame allocator against malloc, the strata heap, a
// mimalloc heap and std::pmr::monotonic_buffer_resource: single allocations,
// batches, 004_'s realistic frames and alignment mix, and thread scaling.
//
// For fine A/B work on the arena only. The report's figures for these measurements
// come from strata-bench, which covers them side by side with the seed's strategies:
// `frame/frame-arena` (single sizes, batches by call / batch API / contiguous, the
// realistic frames, default and minimal mode) and `frame/frame-arena-stress` (threads,
// alignment mix with waste). Quote those, not this program, in the report.
//
//   build/<dir>/bench/micro/bench-arena_bench --benchmark_min_time=0.2
#include <strata/strata.h>
#include <strata/arena.hpp>
#include <strata/frame.hpp>

#include <benchmark/benchmark.h>

#include "mimalloc_heap_api.hpp"

#include <cstdlib>
#include <memory_resource>
#include <random>
#include <vector>

namespace {

constexpr std::size_t big_chunk = 64 << 20;

strata::arena_options one_big_chunk() {
  strata::arena_options options;
  options.growth = {big_chunk, 2, big_chunk};
  return options;
}

// ---- single allocation, 64 B ... 64 KiB -------------------------------------

template <strata::arena_config Config>
void arena_single(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  strata::monotonic_arena<strata::malloc_resource, Config> arena(one_big_chunk());
  const std::size_t per_chunk = (big_chunk - 4096) / size;
  std::size_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(arena.allocate(size, 16));
    if (++n == per_chunk) {
      n = 0;
      arena.reset(strata::retention::keep_everything);
    }
  }
}
BENCHMARK(arena_single<strata::arena_config{}>)
    ->Name("single/strata_arena")
    ->RangeMultiplier(4)
    ->Range(64, 64 << 10);
BENCHMARK(arena_single<strata::minimal_arena_config>)
    ->Name("single/strata_arena_minimal")
    ->RangeMultiplier(4)
    ->Range(64, 64 << 10);

void pmr_monotonic_single(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  std::vector<char> buffer(big_chunk);
  std::pmr::monotonic_buffer_resource pool(buffer.data(), buffer.size(),
                                           std::pmr::null_memory_resource());
  const std::size_t per_buffer = (big_chunk - 4096) / size;
  std::size_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pool.allocate(size, 16));
    if (++n == per_buffer) {
      n = 0;
      pool.release();
    }
  }
}
BENCHMARK(pmr_monotonic_single)
    ->Name("single/pmr_monotonic")
    ->RangeMultiplier(4)
    ->Range(64, 64 << 10);

void malloc_free_single(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(size);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(malloc_free_single)->Name("single/malloc+free")->RangeMultiplier(4)->Range(64, 64 << 10);

void mimalloc_heap_single(benchmark::State& state) {
  const auto& mi = mimalloc_heap_api::get();
  if (mi.heap_new == nullptr) return state.SkipWithError("libmimalloc.so.2 not found");
  const auto size = static_cast<std::size_t>(state.range(0));
  mi_heap_t* heap = mi.heap_new();
  for (auto _ : state) {
    void* p = mi.heap_malloc_aligned(heap, size, 16);
    benchmark::DoNotOptimize(p);
    mi.free(p);
  }
}
BENCHMARK(mimalloc_heap_single)
    ->Name("single/mimalloc_heap+free")
    ->RangeMultiplier(4)
    ->Range(64, 64 << 10);

// ---- 1000 separate 64-byte blocks -------------------------------------------

void arena_batch(benchmark::State& state) {
  strata::monotonic_arena<strata::malloc_resource, strata::minimal_arena_config> arena(
      one_big_chunk());
  std::vector<void*> out(1000);
  std::size_t n = 0;
  for (auto _ : state) {
    arena.allocate_batch(64, out.size(), out.data(), 16);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    if (++n == 1000) {
      n = 0;
      arena.reset(strata::retention::keep_everything);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(arena_batch)->Name("batch1000x64/strata_arena_batch");

void arena_loop(benchmark::State& state) {
  strata::monotonic_arena<strata::malloc_resource, strata::minimal_arena_config> arena(
      one_big_chunk());
  std::vector<void*> out(1000);
  std::size_t n = 0;
  for (auto _ : state) {
    for (auto& p : out) p = arena.allocate(64, 16);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    if (++n == 1000) {
      n = 0;
      arena.reset(strata::retention::keep_everything);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(arena_loop)->Name("batch1000x64/strata_arena_loop");

void pmr_monotonic_loop(benchmark::State& state) {
  std::vector<char> buffer(big_chunk);
  std::pmr::monotonic_buffer_resource pool(buffer.data(), buffer.size(),
                                           std::pmr::null_memory_resource());
  std::vector<void*> out(1000);
  std::size_t n = 0;
  for (auto _ : state) {
    for (auto& p : out) p = pool.allocate(64, 16);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    if (++n == 1000) {
      n = 0;
      pool.release();
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(pmr_monotonic_loop)->Name("batch1000x64/pmr_monotonic_loop");

void strata_heap_batch(benchmark::State& state) {
  std::vector<void*> out(1000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(strata_malloc_batch(64, out.size(), out.data()));
    strata_free_batch(out.data(), out.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(strata_heap_batch)->Name("batch1000x64/strata_malloc_batch+free_batch");

void malloc_loop(benchmark::State& state) {
  std::vector<void*> out(1000);
  for (auto _ : state) {
    for (auto& p : out) p = std::malloc(64);
    benchmark::DoNotOptimize(out.data());
    for (void* p : out) std::free(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(malloc_loop)->Name("batch1000x64/malloc+free");

// ---- 004_'s realistic frames ------------------------------------------------

// Sizes of one frame: `count` blocks of mixed sizes summing to about `bytes`.
std::vector<std::size_t> frame_sizes(std::size_t count, std::size_t bytes) {
  std::mt19937 rng(static_cast<unsigned>(count));
  std::size_t mean = bytes / count;
  std::vector<std::size_t> sizes(count);
  for (auto& s : sizes) s = mean / 2 + rng() % (mean + 1);
  return sizes;
}

// Frame scenarios: 0 physics (800 / 95 KB), 1 particles (10,000 / 640 KB), 2 UI (200 / 32 KB).
std::vector<std::size_t> scenario(std::int64_t which) {
  switch (which) {
    case 0:
      return frame_sizes(800, 95 * 1000);
    case 1:
      return frame_sizes(10000, 640 * 1000);
    default:
      return frame_sizes(200, 32 * 1000);
  }
}
void frame_names(benchmark::internal::Benchmark* b) {
  b->ArgNames({"scenario"})->Arg(0)->Arg(1)->Arg(2);
}

void frames_strata(benchmark::State& state) {
  const std::vector<std::size_t> sizes = scenario(state.range(0));
  strata::frame_allocator<> frames;
  for (auto _ : state) {
    frames.begin_frame();
    for (std::size_t s : sizes) benchmark::DoNotOptimize(frames.allocate(s, 16));
    frames.end_frame();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes.size()));
}
BENCHMARK(frames_strata)->Name("frame/strata_frame_allocator")->Apply(frame_names);

void frames_strata_minimal(benchmark::State& state) {
  const std::vector<std::size_t> sizes = scenario(state.range(0));
  strata::frame_allocator<strata::malloc_resource, strata::frame_config{.statistics = false}>
      frames;
  for (auto _ : state) {
    frames.begin_frame();
    for (std::size_t s : sizes) benchmark::DoNotOptimize(frames.allocate(s, 16));
    frames.end_frame();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes.size()));
}
BENCHMARK(frames_strata_minimal)->Name("frame/strata_frame_allocator_minimal")->Apply(frame_names);

void frames_strata_thread_arena(benchmark::State& state) {
  const std::vector<std::size_t> sizes = scenario(state.range(0));
  strata::frame_allocator<> frames;
  for (auto _ : state) {
    frames.begin_frame();
    auto& arena = frames.this_thread_arena();
    for (std::size_t s : sizes) benchmark::DoNotOptimize(arena.allocate(s, 16));
    frames.end_frame();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes.size()));
}
BENCHMARK(frames_strata_thread_arena)
    ->Name("frame/strata_frame_this_thread_arena")
    ->Apply(frame_names);

void frames_pmr_monotonic(benchmark::State& state) {
  const std::vector<std::size_t> sizes = scenario(state.range(0));
  std::vector<char> buffer(1 << 20);
  std::pmr::monotonic_buffer_resource pool(buffer.data(), buffer.size());
  for (auto _ : state) {
    for (std::size_t s : sizes) benchmark::DoNotOptimize(pool.allocate(s, 16));
    pool.release();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes.size()));
}
BENCHMARK(frames_pmr_monotonic)->Name("frame/pmr_monotonic")->Apply(frame_names);

template <class Allocate, class Free>
void frames_with(benchmark::State& state, Allocate allocate, Free free) {
  const std::vector<std::size_t> sizes = scenario(state.range(0));
  std::vector<void*> blocks(sizes.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < sizes.size(); ++i) blocks[i] = allocate(sizes[i]);
    benchmark::DoNotOptimize(blocks.data());
    for (void* p : blocks) free(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sizes.size()));
}

void frames_malloc(benchmark::State& state) {
  frames_with(
      state, [](std::size_t s) { return std::malloc(s); }, [](void* p) { std::free(p); });
}
BENCHMARK(frames_malloc)->Name("frame/malloc+free")->Apply(frame_names);

void frames_strata_heap(benchmark::State& state) {
  frames_with(
      state, [](std::size_t s) { return strata_malloc(s); }, [](void* p) { strata_free(p); });
}
BENCHMARK(frames_strata_heap)->Name("frame/strata_malloc+free")->Apply(frame_names);

void frames_mimalloc_heap(benchmark::State& state) {
  const auto& mi = mimalloc_heap_api::get();
  if (mi.heap_new == nullptr) return state.SkipWithError("libmimalloc.so.2 not found");
  mi_heap_t* heap = mi.heap_new();
  frames_with(
      state, [&](std::size_t s) { return mi.heap_malloc_aligned(heap, s, 16); },
      [&](void* p) { mi.free(p); });
}
BENCHMARK(frames_mimalloc_heap)->Name("frame/mimalloc_heap+free")->Apply(frame_names);

// ---- alignment stress: 7/31/63-byte mix -------------------------------------

void alignment_mix(benchmark::State& state) {
  const auto alignment = static_cast<std::size_t>(state.range(0));
  strata::monotonic_arena<> arena(one_big_chunk());
  constexpr std::size_t sizes[] = {7, 31, 63};
  for (auto _ : state) {
    for (int i = 0; i < 999; ++i) benchmark::DoNotOptimize(arena.allocate(sizes[i % 3], alignment));
    state.PauseTiming();
    strata::arena_stats s = arena.stats();
    state.counters["waste_pct"] = 100.0 * static_cast<double>(s.alignment_waste) /
                                  static_cast<double>(s.bytes_used + s.alignment_waste);
    arena.reset(strata::retention::keep_everything);
    state.ResumeTiming();
  }
}
BENCHMARK(alignment_mix)->Name("align_7_31_63/strata_arena")->ArgNames({"align"})->Arg(1)->Arg(8);

// ---- thread scaling: each thread its own frame arena ------------------------

strata::frame_allocator<strata::malloc_resource, strata::frame_config{.statistics = false}>
    shared_frames;

void frames_threads(benchmark::State& state) {
  for (auto _ : state) {
    shared_frames.begin_frame();
    for (int i = 0; i < 10000; ++i) benchmark::DoNotOptimize(shared_frames.allocate(64, 16));
    shared_frames.end_frame();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 10000);
}
BENCHMARK(frames_threads)->Name("threads/strata_frame_64B")->Threads(1)->Threads(2)->UseRealTime();

void malloc_threads(benchmark::State& state) {
  std::vector<void*> blocks(10000);
  for (auto _ : state) {
    for (auto& p : blocks) p = std::malloc(64);
    benchmark::DoNotOptimize(blocks.data());
    for (void* p : blocks) std::free(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 10000);
}
BENCHMARK(malloc_threads)->Name("threads/malloc+free_64B")->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
