// Which 64-byte cache lines the blocks handed to each thread covered, to count the lines
// that blocks of two or more threads shared: the layout that makes false sharing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata_bench {

class cache_line_census {
 public:
  // Room for `blocks_per_thread` distinct blocks of up to `block_bytes` per thread,
  // reserved now so that noting a block inside a timed loop never allocates.
  cache_line_census(int threads, std::size_t blocks_per_thread, std::size_t block_bytes);

  // Notes that thread `thread` got `bytes` at `block`; the same block as that thread's
  // previous one is noted once (a heap that reuses one block hands it back every time).
  void note(int thread, const void* block, std::size_t bytes);

  // Lines covered by blocks of more than one thread.
  std::size_t shared_lines() const;

  // Forgets every block noted, keeping the reserved room.
  void clear();

 private:
  // One thread's lines, padded to a line of its own so the census cannot share one.
  struct alignas(64) thread_lines {
    std::vector<std::uintptr_t> lines;
    const void* previous = nullptr;
  };
  std::vector<thread_lines> threads_;
};

}  // namespace strata_bench
