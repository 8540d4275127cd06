// Issue 35: a server simulation in which each thread frees the blocks the previous
// thread allocated. Two chains run at once; each keeps an array of blocks of 10-1,000 B
// that passes from thread to thread: a thread replaces random blocks for a while, then
// exits and a new thread takes the array over, freeing what its predecessor allocated.
// Frees are unsized (free) or sized (operator delete with the size).
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t blocks_per_chain = 1000;
constexpr int generations = 20;

// One replacement: which block goes and the size of the one that takes its place.
struct handoff_step {
  std::uint32_t slot;
  std::uint32_t size;
};

std::vector<handoff_step> handoff_steps(int count, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::uint32_t> slot(0, blocks_per_chain - 1);
  std::uniform_int_distribution<std::uint32_t> size(10, 1000);
  std::vector<handoff_step> steps(static_cast<std::size_t>(count));
  for (auto& step : steps) step = {slot(random), size(random)};
  return steps;
}

// The blocks a chain's threads pass on, with their sizes for the sized free.
struct chain {
  std::vector<char*> blocks = std::vector<char*>(blocks_per_chain);
  std::vector<std::uint32_t> sizes = std::vector<std::uint32_t>(blocks_per_chain);
};

char* allocate(std::size_t size, bool sized) {
  return static_cast<char*>(sized ? ::operator new(size) : std::malloc(size));
}

void release(char* block, std::size_t size, bool sized) {
  if (sized)
    ::operator delete(block, size);
  else
    std::free(block);
}

// One thread's turn: the given steps applied to the chain's blocks.
void replace_blocks(chain& c, const handoff_step* steps, int count, bool sized) {
  for (int i = 0; i < count; ++i) {
    const handoff_step& step = steps[i];
    release(c.blocks[step.slot], c.sizes[step.slot], sized);
    c.blocks[step.slot] = allocate(step.size, sized);
    c.blocks[step.slot][0] = 1;
    c.sizes[step.slot] = step.size;
  }
}

// Runs one chain: filled, then `generations` threads in turn, then emptied.
void run_chain(const std::vector<handoff_step>& steps, bool sized) {
  chain c;
  for (std::size_t i = 0; i < blocks_per_chain; ++i) {
    c.sizes[i] = steps[i].size;
    c.blocks[i] = allocate(c.sizes[i], sized);
  }
  const int per_thread = static_cast<int>(steps.size()) / generations;
  for (int g = 0; g < generations; ++g) {
    std::thread turn(replace_blocks, std::ref(c), steps.data() + g * per_thread, per_thread, sized);
    turn.join();
  }
  for (std::size_t i = 0; i < blocks_per_chain; ++i) release(c.blocks[i], c.sizes[i], sized);
}

}  // namespace

// Nanoseconds of wall time per replacement over both chains, unsized and sized frees.
void heap_server_handoff(const run_settings& settings, recorder& out) {
  const int steps = settings.full ? 2'000'000 : 400'000;
  const std::vector<std::vector<handoff_step>> plans = {handoff_steps(steps, 35),
                                                        handoff_steps(steps, 36)};
  run_rounds(settings, [&](bool measured) {
    for (bool sized : {false, true}) {
      const double wall = run_thread_team(
          2, [&](int index) { run_chain(plans[static_cast<std::size_t>(index)], sized); });
      if (measured) out.add(sized ? "sized free" : "unsized free", "ns/op", wall / (2.0 * steps));
    }
  });
}

}  // namespace strata_bench
