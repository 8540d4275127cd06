// Seed 000 (XSigma), its BFC allocator case: mixed sizes allocated and freed in a
// preallocated region. strata's bfc (one 64 MB region taken up front and kept across
// rounds) beside glibc's malloc, std::pmr::unsynchronized_pool_resource and the
// strata heap, all on one fixed random sequence.
#include <strata/bfc.hpp>
#include <strata/resource.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t live_blocks = 2000;
constexpr std::size_t churn_steps = 50'000;

// The fixed sequence: sizes 64 B - 64 KB, log-uniform; the blocks that fill the
// live set, then per churn step the slot freed and the size allocated in its place.
struct mixed_sequence {
  std::vector<std::uint32_t> initial;
  std::vector<std::uint32_t> slot;
  std::vector<std::uint32_t> size;

  mixed_sequence() {
    std::mt19937_64 rng(0);
    std::uniform_real_distribution<double> log_size(6.0, 16.0);
    auto next_size = [&] { return static_cast<std::uint32_t>(std::exp2(log_size(rng))); };
    for (std::size_t i = 0; i < live_blocks; ++i) initial.push_back(next_size());
    for (std::size_t i = 0; i < churn_steps; ++i) {
      slot.push_back(static_cast<std::uint32_t>(rng() % live_blocks));
      size.push_back(next_size());
    }
  }
};

// Times of one pass of the sequence through a strategy, in nanoseconds per operation.
struct pass_times {
  double fill_ns;   // per allocation while the live set fills
  double churn_ns;  // per free+allocate pair
  double drain_ns;  // per free while it empties
};

// `after_churn` runs untimed while the 2,000 blocks are still live.
template <class Allocate, class Free, class AfterChurn>
pass_times run_sequence(const mixed_sequence& s, Allocate allocate, Free free,
                        AfterChurn after_churn) {
  std::vector<void*> blocks(live_blocks);
  std::vector<std::uint32_t> sizes = s.initial;
  pass_times times{};
  double start = monotonic_ns();
  for (std::size_t i = 0; i < live_blocks; ++i) blocks[i] = allocate(sizes[i]);
  times.fill_ns = (monotonic_ns() - start) / live_blocks;
  start = monotonic_ns();
  for (std::size_t step = 0; step < churn_steps; ++step) {
    std::uint32_t slot = s.slot[step];
    free(blocks[slot], sizes[slot]);
    sizes[slot] = s.size[step];
    blocks[slot] = allocate(sizes[slot]);
    escape(blocks[slot]);
  }
  times.churn_ns = (monotonic_ns() - start) / churn_steps;
  after_churn();
  start = monotonic_ns();
  for (std::size_t i = 0; i < live_blocks; ++i) free(blocks[i], sizes[i]);
  times.drain_ns = (monotonic_ns() - start) / live_blocks;
  return times;
}

// Record one strategy's pass under the scenario's three labels.
void record(recorder& out, const std::string& strategy, const pass_times& times) {
  out.add_for(strategy, "fill: 2,000 allocations, 64 B-64 KB", "ns/op", times.fill_ns);
  out.add_for(strategy, "churn: free + allocate, 2,000 live", "ns/pair", times.churn_ns);
  out.add_for(strategy, "drain: 2,000 frees", "ns/op", times.drain_ns);
}

}  // namespace

// Fill 2,000 blocks of 64 B-64 KB, churn 50,000 free+allocate pairs at random slots,
// free everything; bfc in its preallocated region, malloc, a pmr pool, the strata heap.
void xsigma_bfc(const run_settings& settings, recorder& out) {
  const mixed_sequence sequence;
  strata::bfc_config config;
  config.initial_region_bytes = std::size_t{64} << 20;
  config.growth = strata::bfc_growth::fixed;
  strata::bfc<> bfc(config);
  bfc.deallocate(bfc.allocate(1), 1);  // the region, taken before any round
  std::pmr::unsynchronized_pool_resource pool(
      std::pmr::pool_options{.max_blocks_per_chunk = 0, .largest_required_pool_block = 65536});
  strata::heap_resource heap;
  strata::bfc_statistics live;
  run_rounds(settings, [&](bool measured) {
    const pass_times bfc_times = run_sequence(
        sequence, [&](std::size_t n) { return bfc.allocate(n); },
        [&](void* p, std::size_t n) { bfc.deallocate(p, n); }, [&] { live = bfc.statistics(); });
    const pass_times malloc_times = run_sequence(
        sequence, [](std::size_t n) { return std::malloc(n); },
        [](void* p, std::size_t) { std::free(p); }, [] {});
    const pass_times pool_times = run_sequence(
        sequence, [&](std::size_t n) { return pool.allocate(n); },
        [&](void* p, std::size_t n) { pool.deallocate(p, n); }, [] {});
    const pass_times heap_times = run_sequence(
        sequence, [&](std::size_t n) { return heap.allocate(n); },
        [&](void* p, std::size_t n) { heap.deallocate(p, n); }, [] {});
    if (!measured) return;
    record(out, "strata bfc", bfc_times);
    record(out, "malloc", malloc_times);
    record(out, "pmr::unsynchronized_pool", pool_times);
    record(out, "strata heap", heap_times);
  });
  // The region's state with 2,000 blocks live, and after the last pass freed them all.
  out.fact("bfc fragmentation, 2,000 live", live.fragmentation());
  out.fact("bfc bytes in use, 2,000 live", static_cast<double>(live.bytes_in_use));
  out.fact("bfc largest free chunk, 2,000 live", static_cast<double>(live.largest_free));
  out.fact("bfc regions", static_cast<double>(bfc.statistics().regions));
  out.fact("bfc bytes in use after the rounds", static_cast<double>(bfc.statistics().bytes_in_use));
}

}  // namespace strata_bench
