// The seed 004's three realistic game frames, shared by the malloc and the strategy
// scenarios so both allocate exactly the same sizes.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace strata_bench {

// A game frame: how many allocations it makes and how many bytes they add up to.
struct frame_shape {
  const char* name;
  int allocations;
  std::size_t total_bytes;
};

// Physics (800 allocations, 95 KB), particles (10,000, 640 KB) and UI (200, 32 KB).
inline constexpr frame_shape realistic_frames[] = {
    {"physics: 800 allocs, 95 KB", 800, 95 * 1024},
    {"particles: 10,000 allocs, 640 KB", 10'000, 640 * 1024},
    {"UI: 200 allocs, 32 KB", 200, 32 * 1024}};

// Sizes for one frame: uniform around the mean, adjusted so they sum to the total.
inline std::vector<std::size_t> frame_sizes(const frame_shape& shape) {
  const std::size_t mean = shape.total_bytes / static_cast<std::size_t>(shape.allocations);
  std::vector<std::size_t> sizes(static_cast<std::size_t>(shape.allocations), mean);
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::size_t> swing(0, mean / 2);
  for (std::size_t i = 0; i + 1 < sizes.size(); i += 2) {
    const std::size_t delta = swing(random);
    sizes[i] += delta;
    sizes[i + 1] -= delta;
  }
  sizes.back() += shape.total_bytes - mean * sizes.size();
  return sizes;
}

}  // namespace strata_bench
