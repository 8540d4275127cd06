// Seed 004 (framealloc), strata's frame allocator beside the seed's strategies under
// stress: 1 to N threads (N = the CPUs this process may use) and the 7/31/63-byte
// alignment mix, with its time and its waste.
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "frame_strategies.hpp"
#include "optimizer_barrier.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// 1, 2, 4 ... up to the usable CPUs, and the CPU count itself.
std::vector<int> thread_counts() {
  const int cpus = std::max<int>(1, static_cast<int>(allowed_cpus().size()));
  std::vector<int> counts;
  for (int threads = 1; threads < cpus; threads *= 2) counts.push_back(threads);
  counts.push_back(cpus);
  return counts;
}

// The strategy a thread of a team uses: the shared one, or one of its own.
template <class Strategy>
void run_frames_on_team(Strategy& shared, int threads, int batches, recorder& out, bool measured) {
  const double wall = run_thread_team(threads, [&](int) {
    std::unique_ptr<Strategy> own;
    if constexpr (!Strategy::shared_by_threads) own = std::make_unique<Strategy>();
    Strategy& strategy = own ? *own : shared;
    std::vector<void*> blocks(1000);
    for (int batch = 0; batch < batches; ++batch) {
      strategy.begin_frame();
      for (auto& block : blocks) block = strategy.allocate(64, alignof(std::max_align_t));
      escape(blocks.data());
      strategy.end_frame(blocks);
    }
  });
  if (!measured) return;
  const std::string label = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  out.add_point_for(std::string(Strategy::name), "64 B", threads, label,
                    "ns per allocation per thread", wall / (batches * 1000.0));
}

// Bytes the blocks occupy: for a bump strategy, from the first block to the end of the
// last (padding included); for malloc, the sum of malloc_usable_size.
template <class Strategy>
double occupied_bytes(const std::vector<void*>& blocks, const std::size_t* requests) {
  if constexpr (Strategy::bumps_one_buffer) {
    const auto first = reinterpret_cast<std::uintptr_t>(blocks.front());
    const auto last = reinterpret_cast<std::uintptr_t>(blocks.back());
    return static_cast<double>(last + requests[(blocks.size() - 1) % 3] - first);
  } else {
    double usable = 0;
    for (void* block : blocks) usable += static_cast<double>(malloc_usable_size(block));
    return usable;
  }
}

}  // namespace

// Every thread of a team runs frames of 1,000 x 64 B; the time per allocation each
// thread sees is wall time / its allocations. Then 1,000 allocations cycling 7, 31
// and 63 bytes at alignment 1 (a char array of that size) and 8, timed, with waste.
void frame_arena_stress(const run_settings& settings, recorder& out) {
  const int batches = settings.full ? 400 : 100;
  constexpr std::size_t requests[] = {7, 31, 63};
  const int stress_batches = settings.full ? 2000 : 300;
  auto all = std::make_unique<frame_strategies>();
  std::vector<void*> blocks(1000);
  run_rounds(settings, [&](bool measured) {
    for (int threads : thread_counts()) {
      for_each_frame_strategy(*all, [&](auto& strategy) {
        run_frames_on_team(strategy, threads, batches, out, measured);
      });
    }
    for (std::size_t alignment : {1, 8}) {
      const std::string suffix = ", align " + std::to_string(alignment);
      for_each_frame_strategy(*all, [&](auto& strategy) {
        using strategy_type = std::remove_reference_t<decltype(strategy)>;
        double elapsed = 0, requested = 0, occupied = 0;
        for (int batch = 0; batch < stress_batches; ++batch) {
          strategy.begin_frame();
          const double start = monotonic_ns();
          for (std::size_t i = 0; i < blocks.size(); ++i) {
            blocks[i] = strategy.allocate(requests[i % 3], alignment);
          }
          elapsed += monotonic_ns() - start;
          escape(blocks.data());
          if (batch == 0) {
            requested = 0;
            for (std::size_t i = 0; i < blocks.size(); ++i) {
              requested += static_cast<double>(requests[i % 3]);
            }
            occupied = occupied_bytes<strategy_type>(blocks, requests);
          }
          strategy.end_frame(blocks);
        }
        if (!measured) return;
        const std::string name(strategy.name);
        out.add_for(name, "1,000 x 7|31|63 B" + suffix, "ns", elapsed / stress_batches);
        out.add_for(name, "waste" + suffix, "%", 100.0 * (occupied - requested) / occupied);
      });
    }
  });
  out.fact("threads", static_cast<double>(thread_counts().back()));
}

}  // namespace strata_bench
