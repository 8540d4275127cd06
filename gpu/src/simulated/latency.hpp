// The simulated device's latencies: configured delays spent on the calling
// thread or the stream, never shorter than configured and not much longer.
#ifndef STRATA_GPU_SIMULATED_LATENCY_HPP
#define STRATA_GPU_SIMULATED_LATENCY_HPP

#include <chrono>
#include <thread>

namespace strata::gpu::simulated {

// Sleep most of a long latency and spin the rest.
inline void spend(std::chrono::nanoseconds latency) {
  if (latency <= std::chrono::nanoseconds::zero()) return;
  const auto deadline = std::chrono::steady_clock::now() + latency;
  if (latency > std::chrono::milliseconds(1))
    std::this_thread::sleep_for(latency - std::chrono::microseconds(500));
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

}  // namespace strata::gpu::simulated

#endif
