// Seed 002's block sets and its CPU access, shared by its host-malloc scenarios
// (unified_workloads.cpp) and its managed-memory ones (gpu_managed_workloads.cpp), so
// both measure the same blocks the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata_bench {

// `count` sizes drawn uniformly from [low, high] bytes with a fixed seed.
std::vector<std::size_t> sizes_between(std::size_t count, std::size_t low, std::size_t high,
                                       unsigned seed);

std::vector<std::size_t> unified_small_blocks();         // 256 of 4 KB-1 MB
std::vector<std::size_t> unified_medium_blocks();        // 16 of 1-10 MB
std::vector<std::size_t> unified_large_blocks();         // 16, 32 and 64 MB
std::vector<std::size_t> unified_mixed_blocks();         // 64 small, 8 medium, one 20 MB
std::vector<std::size_t> unified_repeated_1mb_blocks();  // 64 of exactly 1 MB

// The CPU access of one block: every byte written with `value`, then one byte per
// cache line read back; the sum, for the caller to keep.
std::uint64_t write_and_read(char* block, std::size_t bytes, int value);

// The multithreaded runs: each thread passes `count` blocks of [low, high] bytes
// (its own fixed seed) through allocate / access / free 4 times.
struct unified_team {
  const char* name;
  int threads;
  std::size_t count, low, high;
};
std::vector<unified_team> unified_teams();

}  // namespace strata_bench
