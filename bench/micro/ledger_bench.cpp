// A memory ledger snapshot with 100 live resources (bfc, buddy, pools, arenas,
// each holding memory, a quarter of them tagged children of another): the
// snapshot alone, and the snapshot written as JSON. The goal is 1 ms or less.
//
//   build/<dir>/bench/micro/bench-ledger_bench
#include <strata/arena.hpp>
#include <strata/bfc.hpp>
#include <strata/buddy.hpp>
#include <strata/ledger.hpp>
#include <strata/pool.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using child_arena = strata::monotonic_arena<strata::upstream_ref<strata::bfc<>>>;

// 100 live resources: 25 bfc, each with a child arena over it, 25 pools and 25 buddies.
struct hundred_resources {
  std::vector<std::unique_ptr<strata::bfc<>>> blocks;
  std::vector<std::unique_ptr<child_arena>> arenas;
  std::vector<std::unique_ptr<strata::fixed_pool<>>> pools;
  std::vector<std::unique_ptr<strata::buddy<>>> buddies;

  hundred_resources() {
    for (int i = 0; i < 25; ++i) {
      blocks.push_back(std::make_unique<strata::bfc<>>());
      blocks.back()->ledger().set_tag("bfc " + std::to_string(i));
      (void)blocks.back()->allocate(4096);
      arenas.push_back(std::make_unique<child_arena>(strata::arena_options{},
                                                     strata::upstream_ref(*blocks.back())));
      (void)arenas.back()->allocate(1000);
      pools.push_back(std::make_unique<strata::fixed_pool<>>(64));
      (void)pools.back()->allocate();
      buddies.push_back(std::make_unique<strata::buddy<>>());
    }
  }
};

void snapshot(benchmark::State& state) {
  hundred_resources live;
  for (auto _ : state) {
    strata::memory_ledger ledger = strata::memory_ledger::take();
    benchmark::DoNotOptimize(ledger.rows().data());
  }
  state.counters["resources"] = static_cast<double>(strata::memory_ledger::live_entries());
}
BENCHMARK(snapshot)->Unit(benchmark::kMicrosecond);

void snapshot_as_json(benchmark::State& state) {
  hundred_resources live;
  for (auto _ : state) {
    std::string json = strata::memory_ledger::take().json();
    benchmark::DoNotOptimize(json.data());
  }
}
BENCHMARK(snapshot_as_json)->Unit(benchmark::kMicrosecond);

void snapshot_as_html(benchmark::State& state) {
  hundred_resources live;
  for (auto _ : state) {
    std::string html = strata::memory_ledger::take().html();
    benchmark::DoNotOptimize(html.data());
  }
}
BENCHMARK(snapshot_as_html)->Unit(benchmark::kMicrosecond);

}  // namespace
