// Allocate+free pairs with 10,000 blocks of mixed sizes live: strata's bfc and
// buddy against std::pmr::unsynchronized_pool_resource and malloc, all on the
// same fixed random sequence (sizes 16 B - 64 KiB, log-uniform; each step
// frees a random live block and allocates the next size in its place).
//
//   build/<dir>/bench/micro/bench-bfc_bench
#include <strata/bfc.hpp>
#include <strata/buddy.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <random>
#include <vector>

namespace {

constexpr std::size_t live_blocks = 10000;
constexpr std::size_t steps = 1 << 16;  // the sequence repeats after this many pairs

// The fixed sequence: the initial sizes, then per step a slot and a new size.
struct sequence {
  std::vector<std::uint32_t> initial;
  std::vector<std::uint32_t> slot;
  std::vector<std::uint32_t> size;

  sequence() {
    std::mt19937_64 rng(2026);
    std::uniform_real_distribution<double> log_size(4.0, 16.0);  // 2^4 .. 2^16 bytes
    auto next_size = [&] { return static_cast<std::uint32_t>(std::exp2(log_size(rng))); };
    for (std::size_t i = 0; i < live_blocks; ++i) initial.push_back(next_size());
    for (std::size_t i = 0; i < steps; ++i) {
      slot.push_back(static_cast<std::uint32_t>(rng() % live_blocks));
      size.push_back(next_size());
    }
  }
};

const sequence& the_sequence() {
  static const sequence s;
  return s;
}

// Fill the live set, then run free+allocate pairs, one per iteration.
template <class Allocate, class Free>
void run_pairs(benchmark::State& state, Allocate allocate, Free free) {
  const sequence& s = the_sequence();
  std::vector<void*> blocks(live_blocks);
  std::vector<std::uint32_t> sizes = s.initial;
  for (std::size_t i = 0; i < live_blocks; ++i) blocks[i] = allocate(sizes[i]);
  std::size_t step = 0;
  for (auto _ : state) {
    std::uint32_t slot = s.slot[step];
    free(blocks[slot], sizes[slot]);
    sizes[slot] = s.size[step];
    blocks[slot] = allocate(sizes[slot]);
    benchmark::DoNotOptimize(blocks[slot]);
    step = (step + 1) & (steps - 1);
  }
  for (std::size_t i = 0; i < live_blocks; ++i) free(blocks[i], sizes[i]);
}

void bfc_pairs(benchmark::State& state) {
  strata::bfc_config config;
  config.initial_region_bytes = std::size_t{64} << 20;
  strata::bfc<> pool(config);
  run_pairs(
      state, [&](std::size_t n) { return pool.allocate(n); },
      [&](void* p, std::size_t n) { pool.deallocate(p, n); });
  state.counters["fragmentation"] = pool.statistics().fragmentation();
}
BENCHMARK(bfc_pairs)->Name("mixed10k/strata_bfc");

void buddy_pairs(benchmark::State& state) {
  strata::buddy<> pool(
      strata::buddy_config{.total_bytes = std::size_t{512} << 20, .min_block = 16});
  run_pairs(
      state, [&](std::size_t n) { return pool.allocate(n); },
      [&](void* p, std::size_t n) { pool.deallocate(p, n); });
}
BENCHMARK(buddy_pairs)->Name("mixed10k/strata_buddy");

void pmr_pool_pairs(benchmark::State& state) {
  std::pmr::unsynchronized_pool_resource pool(
      std::pmr::pool_options{.max_blocks_per_chunk = 0, .largest_required_pool_block = 65536});
  run_pairs(
      state, [&](std::size_t n) { return pool.allocate(n); },
      [&](void* p, std::size_t n) { pool.deallocate(p, n); });
}
BENCHMARK(pmr_pool_pairs)->Name("mixed10k/pmr_unsynchronized_pool");

void malloc_pairs(benchmark::State& state) {
  run_pairs(
      state, [](std::size_t n) { return std::malloc(n); },
      [](void* p, std::size_t) { std::free(p); });
}
BENCHMARK(malloc_pairs)->Name("mixed10k/malloc");

}  // namespace
