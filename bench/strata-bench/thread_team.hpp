// Runs the same body on several threads that start together, each pinned to a CPU.
#pragma once

#include <functional>
#include <vector>

namespace strata_bench {

// The CPUs this process may run on (as at its first call, before any pinning).
std::vector<int> allowed_cpus();

// Pins the calling thread to the `index`-th allowed CPU (round robin); false if refused.
bool pin_current_thread(int index);

// Starts `threads` threads, releases them at once and returns the wall time in
// nanoseconds from the release until the last one finished. Each thread calls
// `body(thread_index)`; thread i is pinned to allowed CPU i (modulo the CPU count).
double run_thread_team(int threads, const std::function<void(int)>& body);

}  // namespace strata_bench
