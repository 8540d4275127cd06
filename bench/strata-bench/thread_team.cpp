#include "thread_team.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include "cycle_clock.hpp"

namespace strata_bench {

namespace {

// The CPUs the calling thread may run on now.
std::vector<int> affinity_of_calling_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

}  // namespace

// Read once, before the worker pins its main thread to one CPU: asked afterwards, the
// main thread's affinity would say one CPU and every team would shrink to one thread.
std::vector<int> allowed_cpus() {
  static const std::vector<int> cpus = affinity_of_calling_thread();
  return cpus;
}

bool pin_current_thread(int index) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<std::size_t>(index) % cpus.size()], &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

double run_thread_team(int threads, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> team;
  team.reserve(static_cast<std::size_t>(threads));
  for (int index = 0; index < threads; ++index) {
    team.emplace_back([&, index] {
      pin_current_thread(index);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(index);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const double start = monotonic_ns();
  go.store(true, std::memory_order_release);
  for (auto& thread : team) thread.join();
  return monotonic_ns() - start;
}

}  // namespace strata_bench
