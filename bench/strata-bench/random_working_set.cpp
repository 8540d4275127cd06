// Issue 35: a program that allocates and frees blocks of random sizes, skewed towards
// small ones with a long tail to tens of KiB, in random order within a bounded working
// set, on 1 and on 2 threads (each thread its own set).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t working_set = 4000;

// One step of the churn: the slot whose block is freed and the size of its successor.
struct churn_step {
  std::uint32_t slot;
  std::uint32_t size;
};

// 8 B + 40 KiB x u^8 for u uniform in [0, 1): the median block is 168 B, one in ten is
// over 17 KiB. Drawn up front so the timed loop measures malloc, not the generator.
std::vector<churn_step> churn_steps(int count, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<std::uint32_t> slot(0, working_set - 1);
  std::vector<churn_step> steps(static_cast<std::size_t>(count));
  for (auto& step : steps) {
    step.slot = slot(random);
    step.size = 8 + static_cast<std::uint32_t>(std::pow(unit(random), 8) * 40960.0);
  }
  return steps;
}

// Fills the working set with the first steps' sizes, replaces a block per step (its
// first byte written, as a program would) and frees what is left.
void churn(const std::vector<churn_step>& steps) {
  std::vector<char*> blocks(working_set);
  for (std::size_t i = 0; i < working_set; ++i) {
    blocks[i] = static_cast<char*>(std::malloc(steps[i].size));
    blocks[i][0] = 1;
  }
  for (const churn_step& step : steps) {
    std::free(blocks[step.slot]);
    blocks[step.slot] = static_cast<char*>(std::malloc(step.size));
    blocks[step.slot][0] = 1;
  }
  for (char* block : blocks) std::free(block);
}

}  // namespace

// Nanoseconds per replacement, wall time, with one thread and with two.
void heap_random_working_set(const run_settings& settings, recorder& out) {
  const int steps = settings.full ? 2'000'000 : 400'000;
  const std::vector<std::vector<churn_step>> plans = {churn_steps(steps, 35),
                                                      churn_steps(steps, 36)};
  run_rounds(settings, [&](bool measured) {
    for (int threads : {1, 2}) {
      const double wall = run_thread_team(
          threads, [&](int index) { churn(plans[static_cast<std::size_t>(index)]); });
      if (measured)
        out.add(std::to_string(threads) + (threads == 1 ? " thread" : " threads"), "ns/op",
                wall / steps);
    }
  });
}

}  // namespace strata_bench
