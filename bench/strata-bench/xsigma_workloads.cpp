// Seed 000 (XSigma): 10,000 x 4 KB, alignment, large blocks, 4 threads, mixed stress.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "page_faults.hpp"
#include "resident_memory.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

// 10,000 separate malloc(4096) calls, then 10,000 frees, each phase timed as a whole;
// with `touch`, each block's first and last byte is written as it is allocated, so
// every page a block spans is faulted in, as a program that uses its blocks would.
static void four_kib_batch(const run_settings& settings, recorder& out, bool touch) {
  constexpr int count = 10'000;
  constexpr std::size_t bytes = 4096;
  std::vector<void*> blocks(count);
  run_rounds(settings, [&](bool measured) {
    const double start = monotonic_ns();
    for (auto& block : blocks) {
      block = std::malloc(bytes);
      if (touch) {
        static_cast<volatile char*>(block)[0] = 1;
        static_cast<volatile char*>(block)[bytes - 1] = 1;
      }
      escape(block);
    }
    const double allocated = monotonic_ns();
    for (void* block : blocks) std::free(block);
    const double freed = monotonic_ns();
    if (!measured) return;
    const double allocate_us = (allocated - start) / 1e3;
    const double free_us = (freed - allocated) / 1e3;
    out.add("allocate", "µs", allocate_us);
    out.add("free", "µs", free_us);
    out.add("total", "µs", allocate_us + free_us);
    out.add("allocations/s", "ops/s", count / (allocate_us / 1e6), better::higher);
    out.add("deallocations/s", "ops/s", count / (free_us / 1e6), better::higher);
    out.add("total ops/s", "ops/s", 2 * count / ((allocate_us + free_us) / 1e6), better::higher);
  });
}

// The seed's form: the blocks are never touched.
void xsigma_4k_batch(const run_settings& settings, recorder& out) {
  four_kib_batch(settings, out, false);
}

// The realistic form: every block written once.
void xsigma_4k_batch_touched(const run_settings& settings, recorder& out) {
  four_kib_batch(settings, out, true);
}

// posix_memalign of 1,000 blocks of 256 B at each alignment from 16 to 1024 B, then
// their frees; records nanoseconds per allocate+free and checks every address.
void xsigma_alignment(const run_settings& settings, recorder& out) {
  constexpr int count = 1000;
  std::vector<void*> blocks(count);
  long long misaligned = 0;
  long long failed = 0;
  std::string misaligned_at;
  run_rounds(settings, [&](bool measured) {
    for (std::size_t alignment = 16; alignment <= 1024; alignment *= 2) {
      const double start = monotonic_ns();
      for (auto& block : blocks) {
        if (posix_memalign(&block, alignment, 256) != 0) {
          block = nullptr;
          ++failed;
        }
        escape(block);
      }
      for (void* block : blocks) std::free(block);
      const double elapsed = monotonic_ns() - start;
      const long long before = misaligned;
      for (void* block : blocks) {
        if (reinterpret_cast<std::uintptr_t>(block) % alignment != 0) ++misaligned;
      }
      const std::string name = std::to_string(alignment) + " B";
      if (misaligned > before && misaligned_at.find(name) == std::string::npos) {
        misaligned_at += (misaligned_at.empty() ? "" : ", ") + name;
      }
      if (measured) out.add(name, "ns/alloc+free", elapsed / count);
    }
  });
  out.fact("all aligned", misaligned == 0 && failed == 0);
  out.fact("misaligned blocks", static_cast<double>(misaligned));
  out.fact("failed allocations", static_cast<double>(failed));
  if (!misaligned_at.empty()) out.fact("misaligned at alignment", misaligned_at);
}

// One block each of 1, 16 and 64 MB: allocate, write one byte per 4 KB page, free; and
// each round's minor page faults (whether round 2 on reuses the pages of round 1).
void xsigma_large_blocks(const run_settings& settings, recorder& out) {
  bool all_succeeded = true;
  int round = 0;
  run_rounds(settings, [&](bool measured) {
    const long long faults_before = minor_page_faults();
    for (std::size_t megabytes : {1, 16, 64}) {
      const std::size_t bytes = megabytes << 20;
      const double start = monotonic_ns();
      auto* block = static_cast<char*>(std::malloc(bytes));
      if (block == nullptr) {
        all_succeeded = false;
        continue;
      }
      for (std::size_t offset = 0; offset < bytes; offset += 4096) block[offset] = 1;
      escape(block);
      std::free(block);
      const double elapsed = monotonic_ns() - start;
      if (measured) out.add(std::to_string(megabytes) + " MB", "ms", elapsed / 1e6);
    }
    record_round_faults(out, ++round, minor_page_faults() - faults_before, measured);
  });
  out.fact("all succeeded", all_succeeded);
}

// 4 threads each make 1,000 allocations of 1-64 KB (uniform), then free them.
void xsigma_four_threads_mixed(const run_settings& settings, recorder& out) {
  constexpr int threads = 4;
  constexpr int per_thread = 1000;
  std::vector<std::vector<void*>> blocks(threads, std::vector<void*>(per_thread));
  std::vector<int> succeeded(threads);
  run_rounds(settings, [&](bool measured) {
    const double elapsed = run_thread_team(threads, [&](int index) {
      std::mt19937_64 random(static_cast<unsigned>(index) + 1);
      std::uniform_int_distribution<std::size_t> size(1024, 65536);
      int ok = 0;
      for (auto& block : blocks[index]) {
        block = std::malloc(size(random));
        escape(block);
        ok += block != nullptr;
      }
      for (void* block : blocks[index]) std::free(block);
      succeeded[index] = ok;
    });
    if (measured) out.add("4 threads x 1,000", "ms", elapsed / 1e6);
  });
  int total = 0;
  for (int ok : succeeded) total += ok;
  out.fact("successful allocations", static_cast<double>(total));
}

// A size from 64 B to 1 MB: 90% 64 B-4 KB, 9% 4-64 KB, 1% 64 KB-1 MB, log-uniform within.
static std::size_t stress_size(std::mt19937_64& random) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double pick = unit(random);
  const double low = pick < 0.90 ? 64 : pick < 0.99 ? 4096 : 65536;
  const double high = pick < 0.90 ? 4096 : pick < 0.99 ? 65536 : 1048576;
  return static_cast<std::size_t>(low * std::pow(high / low, unit(random)));
}

// A live block of the stress test: its address, size and the byte it was filled with.
struct stress_block {
  unsigned char* data;
  std::size_t size;
  unsigned char pattern;
};

// True if the block still holds its pattern at the start, middle and end.
static bool block_intact(const stress_block& block) {
  const std::size_t probes[] = {0, block.size / 2, block.size - 1};
  for (std::size_t offset : probes) {
    if (block.data[offset] != block.pattern) return false;
  }
  return true;
}

// 10,000 allocations of 64 B-1 MB interleaved with frees of random live blocks
// (each step frees with probability 0.4), every block filled and checked before its
// free; records time, peak live blocks, bytes allocated, the RSS peak and each
// round's page faults: the rounds repeat one sequence, so a heap whose layout
// converges takes none after the first few, and a fault costs far more than
// filling the page it brings in.
void xsigma_mixed_stress(const run_settings& settings, recorder& out) {
  constexpr int allocations = 10'000;
  std::vector<stress_block> live;
  live.reserve(allocations);
  bool intact = true;
  int round = 0;
  run_rounds(settings, [&](bool measured) {
    const long long faults_before = minor_page_faults();
    std::mt19937_64 random(2025);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::size_t rss_before = resident_bytes();
    std::size_t rss_peak = rss_before;
    std::size_t peak_live = 0;
    double total_bytes = 0;
    const auto release = [&](std::size_t index) {
      intact &= block_intact(live[index]);
      std::free(live[index].data);
      live[index] = live.back();
      live.pop_back();
    };
    const double start = monotonic_ns();
    for (int made = 0; made < allocations;) {
      if (!live.empty() && unit(random) < 0.4) {
        release(random() % live.size());
        continue;
      }
      const std::size_t size = stress_size(random);
      auto* data = static_cast<unsigned char*>(std::malloc(size));
      const auto pattern = static_cast<unsigned char>(made * 31 + 7);
      std::memset(data, pattern, size);
      live.push_back({data, size, pattern});
      total_bytes += static_cast<double>(size);
      peak_live = std::max(peak_live, live.size());
      if (++made % 256 == 0) rss_peak = std::max(rss_peak, resident_bytes());
    }
    while (!live.empty()) release(live.size() - 1);
    const double elapsed = monotonic_ns() - start;
    record_round_faults(out, ++round, minor_page_faults() - faults_before, measured);
    if (!measured) return;
    out.add("time", "ms", elapsed / 1e6);
    out.add("RSS growth at peak", "MB", static_cast<double>(rss_peak - rss_before) / 1048576.0);
    out.fact("peak live allocations", static_cast<double>(peak_live));
    out.fact("total bytes", total_bytes);
  });
  out.fact("memory integrity", intact);
}

}  // namespace strata_bench
