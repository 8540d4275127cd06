// Seed 002 (Unified Allocator), host malloc side: sets of blocks allocated, accessed by
// the CPU and freed, each phase timed (allocate / free / access / total, in ms).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "page_faults.hpp"
#include "thread_team.hpp"
#include "unified_block_sets.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t megabyte = 1u << 20;

// Times of one pass over a set of blocks, in nanoseconds.
struct phase_times {
  double allocate = 0, access = 0, free = 0;
};

// Writes every byte of each block, then reads one word per cache line.
std::uint64_t access_blocks(const std::vector<char*>& blocks,
                            const std::vector<std::size_t>& sizes) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    sum += write_and_read(blocks[i], sizes[i], static_cast<int>(i));
  }
  return sum;
}

// Allocates one block per size, accesses them all, frees them all; times each phase.
phase_times allocate_access_free(const std::vector<std::size_t>& sizes) {
  std::vector<char*> blocks(sizes.size());
  phase_times times;
  double start = monotonic_ns();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = static_cast<char*>(std::malloc(sizes[i]));
    escape(blocks[i]);
  }
  times.allocate = monotonic_ns() - start;
  start = monotonic_ns();
  keep_value(access_blocks(blocks, sizes));
  times.access = monotonic_ns() - start;
  start = monotonic_ns();
  for (char* block : blocks) std::free(block);
  times.free = monotonic_ns() - start;
  return times;
}

// Records the four columns of the seed's tables for one measured round.
void record_phases(recorder& out, const phase_times& times) {
  out.add("allocate", "ms", times.allocate / 1e6);
  out.add("free", "ms", times.free / 1e6);
  out.add("access", "ms", times.access / 1e6);
  out.add("total", "ms", (times.allocate + times.free + times.access) / 1e6);
}

// Runs the allocate/access/free pass over fixed sizes for every round, and counts each
// round's minor page faults: a heap that reuses what it freed takes none after round 1.
void run_block_set(const run_settings& settings, recorder& out,
                   const std::vector<std::size_t>& sizes) {
  int round = 0;
  run_rounds(settings, [&](bool measured) {
    const long long faults_before = minor_page_faults();
    const phase_times times = allocate_access_free(sizes);
    record_round_faults(out, ++round, minor_page_faults() - faults_before, measured);
    if (measured) record_phases(out, times);
  });
}

}  // namespace

// 256 blocks of 4 KB to 1 MB (uniform).
void unified_small(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_small_blocks());
}

// 16 blocks of 1 to 10 MB (uniform).
void unified_medium(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_medium_blocks());
}

// Blocks of 16, 32 and 64 MB.
void unified_large(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_large_blocks());
}

// 64 small (4 KB-1 MB), 8 medium (1-10 MB) and one 20 MB block, interleaved.
void unified_mixed(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_mixed_blocks());
}

// 64 blocks of exactly 1 MB.
void unified_repeated_1mb(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_repeated_1mb_blocks());
}

// 1,000 times: allocate 1 MB, write its first byte, free it (the pool-reuse test).
void unified_pool_reuse(const run_settings& settings, recorder& out) {
  constexpr int repeats = 1000;
  run_rounds(settings, [&](bool measured) {
    double allocate = 0, free = 0;
    for (int i = 0; i < repeats; ++i) {
      const double start = monotonic_ns();
      auto* block = static_cast<char*>(std::malloc(megabyte));
      const double allocated = monotonic_ns();
      block[0] = 1;
      escape(block);
      std::free(block);
      free += monotonic_ns() - allocated;
      allocate += allocated - start;
    }
    if (!measured) return;
    out.add("allocate", "ms", allocate / 1e6);
    out.add("free", "ms", free / 1e6);
    out.add("total", "ms", (allocate + free) / 1e6);
  });
}

// 4 threads each allocate/access/free 32 small blocks (4 KB-1 MB), 4 times; then 8 threads
// each do the same with 8 mixed blocks (4 KB-4 MB). Records the mean thread time and the
// wall time.
void unified_threads(const run_settings& settings, recorder& out) {
  run_rounds(settings, [&](bool measured) {
    for (const unified_team& team : unified_teams()) {
      std::vector<double> thread_ns(static_cast<std::size_t>(team.threads));
      const double wall = run_thread_team(team.threads, [&](int index) {
        const auto sizes =
            sizes_between(team.count, team.low, team.high, static_cast<unsigned>(index) + 10);
        const double start = monotonic_ns();
        for (int repeat = 0; repeat < 4; ++repeat) allocate_access_free(sizes);
        thread_ns[static_cast<std::size_t>(index)] = monotonic_ns() - start;
      });
      if (!measured) continue;
      double mean = 0;
      for (double ns : thread_ns) mean += ns / team.threads;
      out.add(std::string(team.name) + ": mean thread time", "ms", mean / 1e6);
      out.add(std::string(team.name) + ": total", "ms", wall / 1e6);
    }
  });
}

}  // namespace strata_bench
