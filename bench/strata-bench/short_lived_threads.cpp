// Issue 35: many short-lived threads that allocate, hand objects to other threads and
// exit. Waves of four threads each allocate objects of 16 B-1 KiB, free some of their
// own, and swap the rest into a shared exchange, freeing the objects they take out of
// it: those were allocated by threads of earlier waves, most of them gone by then.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "cycle_clock.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr int threads_per_wave = 4;
constexpr int objects_per_thread = 2000;
constexpr std::size_t exchange_slots = 4096;

// The objects threads leave for others; any slot may be empty (null).
struct exchange {
  std::atomic<void*> slots[exchange_slots] = {};
};

// One thread's life: allocate, free every fourth of its own objects at once, hand the
// others over, free what it takes in return, exit.
void short_life(exchange& shared, unsigned seed) {
  std::minstd_rand random(seed);
  std::vector<char*> own(objects_per_thread);
  for (auto& object : own) {
    object = static_cast<char*>(std::malloc(16 + random() % 1009));
    object[0] = 1;
  }
  for (std::size_t i = 0; i < own.size(); ++i) {
    if (i % 4 == 0) {
      std::free(own[i]);
      continue;
    }
    void* taken = shared.slots[random() % exchange_slots].exchange(own[i]);
    std::free(taken);
  }
}

// Runs `waves` waves of short-lived threads and empties the exchange.
void run_waves(int waves) {
  exchange shared;
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<std::thread> team;
    for (int t = 0; t < threads_per_wave; ++t)
      team.emplace_back(short_life, std::ref(shared),
                        static_cast<unsigned>(wave * threads_per_wave + t + 1));
    for (auto& thread : team) thread.join();
  }
  for (auto& slot : shared.slots) std::free(slot.load());
}

}  // namespace

// Microseconds of wall time per thread, from its start to its exit.
void heap_short_lived_threads(const run_settings& settings, recorder& out) {
  const int waves = settings.full ? 200 : 50;
  run_rounds(settings, [&](bool measured) {
    const double start = monotonic_ns();
    run_waves(waves);
    const double us = (monotonic_ns() - start) / (waves * threads_per_wave) / 1e3;
    if (measured) out.add("4 threads a wave", "µs/thread", us);
  });
}

}  // namespace strata_bench
