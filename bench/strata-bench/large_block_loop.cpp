// Blocks of 5-25 MB allocated, touched and freed one after another (issue 21): sizes
// above every heap's small-object range, where one heap keeps the freed block to reuse
// and another returns it to the system and takes fresh, unfaulted pages each time.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "page_faults.hpp"
#include "resident_memory.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t megabyte = 1u << 20;
constexpr std::size_t page_bytes = 4096;

// `count` block sizes drawn uniformly from 5 MB to 25 MB with a fixed seed.
std::vector<std::size_t> block_sizes(int count) {
  std::mt19937_64 random(21);
  std::uniform_int_distribution<std::size_t> size(5 * megabyte, 25 * megabyte);
  std::vector<std::size_t> sizes(static_cast<std::size_t>(count));
  for (auto& each : sizes) each = size(random);
  return sizes;
}

// Writes one byte per 4 KB page (`every_page`), as a program that fills its block would,
// or only the first, middle and last byte, which leaves the cost of the heap alone.
void touch(char* block, std::size_t bytes, bool every_page) {
  if (every_page) {
    for (std::size_t offset = 0; offset < bytes; offset += page_bytes) block[offset] = 1;
  } else {
    block[0] = block[bytes / 2] = block[bytes - 1] = 1;
  }
  escape(block);
}

// What one loop over the sizes measured.
struct loop_result {
  double cycle_ns = 0;  // mean of malloc + touch + free
  double faults_per_cycle = 0;
  double peak_growth = 0;  // bytes resident at the peak beyond the baseline
  double end_growth = 0;   // bytes resident after the loop beyond the baseline
};

// Allocates, touches and frees a block of each size in turn. Only malloc, the touch and
// free are timed; the resident size is read between them, while the block is live, and
// compared with `rss_baseline`.
loop_result allocate_touch_free(const std::vector<std::size_t>& sizes, bool every_page,
                                std::size_t rss_baseline) {
  std::size_t rss_peak = rss_baseline;
  const long long faults_before = minor_page_faults();
  double timed = 0;
  for (std::size_t bytes : sizes) {
    const double start = monotonic_ns();
    auto* block = static_cast<char*>(std::malloc(bytes));
    touch(block, bytes, every_page);
    const double touched = monotonic_ns();
    rss_peak = std::max(rss_peak, resident_bytes());
    const double freeing = monotonic_ns();
    std::free(block);
    timed += (touched - start) + (monotonic_ns() - freeing);
  }
  loop_result result;
  const auto cycles = static_cast<double>(sizes.size());
  result.cycle_ns = timed / cycles;
  result.faults_per_cycle = static_cast<double>(minor_page_faults() - faults_before) / cycles;
  result.peak_growth = static_cast<double>(rss_peak) - static_cast<double>(rss_baseline);
  result.end_growth = static_cast<double>(resident_bytes()) - static_cast<double>(rss_baseline);
  return result;
}

// Runs the loop every round. The resident sizes are measured from the one before the
// first round, so memory a heap keeps from one round to the next counts as growth.
void large_block_loop(const run_settings& settings, recorder& out, bool every_page) {
  const std::vector<std::size_t> sizes = block_sizes(settings.full ? 500 : 100);
  const std::size_t rss_baseline = resident_bytes();
  run_rounds(settings, [&](bool measured) {
    const loop_result result = allocate_touch_free(sizes, every_page, rss_baseline);
    if (!measured) return;
    out.add("per cycle", "µs", result.cycle_ns / 1e3);
    out.add("minor page faults per cycle", "faults", result.faults_per_cycle);
    out.add("RSS growth at peak", "MB", result.peak_growth / megabyte);
    out.add("RSS growth after the loop", "MB", result.end_growth / megabyte);
  });
}

}  // namespace

// The realistic form: one byte written per page, so every page of the block is used.
void xsigma_large_block_loop(const run_settings& settings, recorder& out) {
  large_block_loop(settings, out, true);
}

// Three bytes written per block, which leaves the heap's own cost and its page faults.
void xsigma_large_block_loop_3_bytes(const run_settings& settings, recorder& out) {
  large_block_loop(settings, out, false);
}

}  // namespace strata_bench
