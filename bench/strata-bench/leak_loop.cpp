// Issue 35: a loop that leaks a fraction of what it allocates. Each of 100 rounds
// allocates blocks of 16-512 B, then frees all but one in fifty, which stay until the
// repetition ends, so the heap grows a little every round.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "cycle_clock.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr int rounds = 100;
constexpr int blocks_per_round = 10'000;
constexpr int leak_one_in = 50;

// The sizes of one round's blocks, the same every round.
std::vector<std::uint32_t> round_sizes() {
  std::mt19937 random(35);
  std::uniform_int_distribution<std::uint32_t> size(16, 512);
  std::vector<std::uint32_t> sizes(blocks_per_round);
  for (auto& each : sizes) each = size(random);
  return sizes;
}

}  // namespace

// Milliseconds for the 100 rounds; the leaked blocks are freed after the clock stops.
void heap_leak_loop(const run_settings& settings, recorder& out) {
  const std::vector<std::uint32_t> sizes = round_sizes();
  std::vector<char*> round(blocks_per_round);
  std::vector<char*> leaked;
  leaked.reserve(rounds * blocks_per_round / leak_one_in);
  run_rounds(settings, [&](bool measured) {
    const double start = monotonic_ns();
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < blocks_per_round; ++i) {
        round[i] = static_cast<char*>(std::malloc(sizes[i]));
        round[i][0] = 1;
      }
      for (int i = 0; i < blocks_per_round; ++i) {
        if (i % leak_one_in == r % leak_one_in)
          leaked.push_back(round[i]);
        else
          std::free(round[i]);
      }
    }
    const double ms = (monotonic_ns() - start) / 1e6;
    for (char* block : leaked) std::free(block);
    leaked.clear();
    if (measured) out.add("100 rounds", "ms", ms);
  });
}

}  // namespace strata_bench
