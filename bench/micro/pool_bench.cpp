// Allocate+free pairs: strata pools against std::pmr pool resources, malloc,
// the strata heap and a mimalloc heap.
//
// For fine A/B work on the pools only. strata-bench's `cell/pool-pairs` (object_pool,
// fixed_pool, std::pmr::unsynchronized_pool_resource, malloc) and `cell/pool-traversal`
// cover the same pair and the seed 001's traversals for the report; quote those.
//
//   build/<dir>/bench/micro/bench-pool_bench
#include <strata/strata.h>
#include <strata/pool.hpp>

#include <benchmark/benchmark.h>

#include "mimalloc_heap_api.hpp"

#include <cstdlib>
#include <memory_resource>
#include <vector>

namespace {

constexpr std::size_t block = 64;
constexpr strata::pool_config unchecked{.checked = false};

template <class Pool>
void strata_pool_pair(benchmark::State& state) {
  Pool pool(block, 16);
  for (auto _ : state) {
    void* p = pool.allocate();
    benchmark::DoNotOptimize(p);
    pool.deallocate(p);
  }
}
BENCHMARK(strata_pool_pair<strata::fixed_pool<strata::malloc_resource, unchecked>>)
    ->Name("pair64/strata_fixed_pool");
BENCHMARK(strata_pool_pair<strata::fixed_pool<strata::malloc_resource, strata::pool_config{true}>>)
    ->Name("pair64/strata_fixed_pool_checked");
BENCHMARK(strata_pool_pair<strata::concurrent_fixed_pool<strata::malloc_resource, unchecked>>)
    ->Name("pair64/strata_concurrent_fixed_pool");

struct particle {
  float position[4];
  float velocity[4];
  float life;
};

void object_pool_pair(benchmark::State& state) {
  strata::object_pool<particle, strata::malloc_resource, strata::no_lock, unchecked> pool;
  for (auto _ : state) {
    particle* p = pool.create();
    benchmark::DoNotOptimize(p);
    pool.destroy(p);
  }
}
BENCHMARK(object_pool_pair)->Name("pair64/strata_object_pool");

// Pairs with 100 other blocks live, so the pools are not a one-block ping-pong.
template <class Pool>
void strata_pool_churn(benchmark::State& state) {
  Pool pool(block, 16);
  std::vector<void*> live(100);
  for (auto& p : live) p = pool.allocate();
  std::size_t i = 0;
  for (auto _ : state) {
    pool.deallocate(live[i]);
    live[i] = pool.allocate();
    benchmark::DoNotOptimize(live[i]);
    i = (i + 37) % live.size();
  }
  for (void* p : live) pool.deallocate(p);
}
BENCHMARK(strata_pool_churn<strata::fixed_pool<strata::malloc_resource, unchecked>>)
    ->Name("churn64/strata_fixed_pool");

template <class Resource>
void pmr_pair(benchmark::State& state) {
  Resource resource;
  for (auto _ : state) {
    void* p = resource.allocate(block, 16);
    benchmark::DoNotOptimize(p);
    resource.deallocate(p, block, 16);
  }
}
BENCHMARK(pmr_pair<std::pmr::unsynchronized_pool_resource>)->Name("pair64/pmr_unsynchronized_pool");
BENCHMARK(pmr_pair<std::pmr::synchronized_pool_resource>)->Name("pair64/pmr_synchronized_pool");

template <class Resource>
void pmr_churn(benchmark::State& state) {
  Resource resource;
  std::vector<void*> live(100);
  for (auto& p : live) p = resource.allocate(block, 16);
  std::size_t i = 0;
  for (auto _ : state) {
    resource.deallocate(live[i], block, 16);
    live[i] = resource.allocate(block, 16);
    benchmark::DoNotOptimize(live[i]);
    i = (i + 37) % live.size();
  }
  for (void* p : live) resource.deallocate(p, block, 16);
}
BENCHMARK(pmr_churn<std::pmr::unsynchronized_pool_resource>)
    ->Name("churn64/pmr_unsynchronized_pool");

void malloc_pair(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::malloc(block);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(malloc_pair)->Name("pair64/malloc+free");

void strata_heap_pair(benchmark::State& state) {
  for (auto _ : state) {
    void* p = strata_malloc(block);
    benchmark::DoNotOptimize(p);
    strata_free(p);
  }
}
BENCHMARK(strata_heap_pair)->Name("pair64/strata_malloc+free");

void mimalloc_heap_pair(benchmark::State& state) {
  const auto& mi = mimalloc_heap_api::get();
  if (mi.heap_new == nullptr) return state.SkipWithError("libmimalloc.so.2 not found");
  mi_heap_t* heap = mi.heap_new();
  for (auto _ : state) {
    void* p = mi.heap_malloc(heap, block);
    benchmark::DoNotOptimize(p);
    mi.free(p);
  }
}
BENCHMARK(mimalloc_heap_pair)->Name("pair64/mimalloc_heap+free");

}  // namespace
