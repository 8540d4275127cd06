#include "cache_line_census.hpp"

#include <algorithm>

namespace strata_bench {

namespace {

constexpr std::uintptr_t line_bytes = 64;

}  // namespace

cache_line_census::cache_line_census(int threads, std::size_t blocks_per_thread,
                                     std::size_t block_bytes)
    : threads_(static_cast<std::size_t>(threads)) {
  // A block spans at most one line more than its size fills.
  const std::size_t lines_per_block = block_bytes / line_bytes + 2;
  for (thread_lines& each : threads_) each.lines.reserve(blocks_per_thread * lines_per_block);
}

void cache_line_census::note(int thread, const void* block, std::size_t bytes) {
  thread_lines& mine = threads_[static_cast<std::size_t>(thread)];
  if (block == mine.previous || bytes == 0) return;
  mine.previous = block;
  const auto first = reinterpret_cast<std::uintptr_t>(block) / line_bytes;
  const auto last = (reinterpret_cast<std::uintptr_t>(block) + bytes - 1) / line_bytes;
  for (std::uintptr_t line = first; line <= last; ++line) {
    // Past the reserved room a block is dropped rather than grow the vector (a
    // reallocation would be a malloc inside the timed loop).
    if (mine.lines.size() == mine.lines.capacity()) return;
    mine.lines.push_back(line);
  }
}

// Each thread's lines without repeats, pooled: a line present twice in the pool was
// covered by two threads.
std::size_t cache_line_census::shared_lines() const {
  std::vector<std::uintptr_t> pool;
  for (const thread_lines& each : threads_) {
    std::vector<std::uintptr_t> mine = each.lines;
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    pool.insert(pool.end(), mine.begin(), mine.end());
  }
  std::sort(pool.begin(), pool.end());
  std::size_t shared = 0;
  for (std::size_t i = 0; i < pool.size();) {
    std::size_t j = i + 1;
    while (j < pool.size() && pool[j] == pool[i]) ++j;
    shared += j - i > 1;
    i = j;
  }
  return shared;
}

void cache_line_census::clear() {
  for (thread_lines& each : threads_) {
    each.lines.clear();
    each.previous = nullptr;
  }
}

}  // namespace strata_bench
