// Seed 004 (framealloc), malloc baselines: single sizes, batches of 1,000, realistic
// game frames, thread scaling and the 7/31/63-byte alignment stress with its waste.
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "frame_shapes.hpp"
#include "optimizer_barrier.hpp"
#include "size_label.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// Nanoseconds per allocation of `batch` malloc(size) calls; the frees that follow are
// not timed.
double allocation_only_ns(std::vector<void*>& blocks, std::size_t size) {
  const double start = monotonic_ns();
  for (auto& block : blocks) {
    block = std::malloc(size);
    escape(block);
  }
  const double elapsed = monotonic_ns() - start;
  for (void* block : blocks) std::free(block);
  return elapsed / static_cast<double>(blocks.size());
}

// Nanoseconds for one frame: allocate every block, write its first byte, free them all.
double frame_ns(const std::vector<std::size_t>& sizes, std::vector<char*>& blocks) {
  const double start = monotonic_ns();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = static_cast<char*>(std::malloc(sizes[i]));
    blocks[i][0] = 1;
  }
  for (char* block : blocks) std::free(block);
  return monotonic_ns() - start;
}

}  // namespace

// One allocation of 64 B to 64 KB, averaged over batches of 1,000 (frees untimed).
void frame_single_sizes(const run_settings& settings, recorder& out) {
  const int batches = settings.full ? 500 : 100;
  std::vector<void*> blocks(1000);
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {64, 256, 1024, 4096, 65536}) {
      double total = 0;
      for (int batch = 0; batch < batches; ++batch) total += allocation_only_ns(blocks, size);
      if (measured) out.add(size_label(size), "ns/allocation", total / batches);
    }
  });
}

// 1,000 separate malloc(64) calls, then their 1,000 frees, each phase timed.
void frame_batch(const run_settings& settings, recorder& out) {
  const int batches = settings.full ? 2000 : 300;
  std::vector<void*> blocks(1000);
  run_rounds(settings, [&](bool measured) {
    double allocate = 0, free = 0;
    for (int batch = 0; batch < batches; ++batch) {
      const double start = monotonic_ns();
      for (auto& block : blocks) {
        block = std::malloc(64);
        escape(block);
      }
      const double allocated = monotonic_ns();
      for (void* block : blocks) std::free(block);
      free += monotonic_ns() - allocated;
      allocate += allocated - start;
    }
    if (!measured) return;
    out.add("1,000 x malloc(64)", "ns", allocate / batches);
    out.add("1,000 x free", "ns", free / batches);
  });
}

// Physics (800 allocations, 95 KB), particles (10,000, 640 KB) and UI (200, 32 KB) frames.
void frame_realistic(const run_settings& settings, recorder& out) {
  const int frames = settings.full ? 500 : 100;
  run_rounds(settings, [&](bool measured) {
    for (const frame_shape& shape : realistic_frames) {
      const std::vector<std::size_t> sizes = frame_sizes(shape);
      std::vector<char*> blocks(sizes.size());
      double total = 0;
      for (int frame = 0; frame < frames; ++frame) total += frame_ns(sizes, blocks);
      if (measured) out.add(shape.name, "µs/frame", total / frames / 1e3);
    }
  });
}

// Every thread repeatedly allocates 1,000 x 64 B and frees them; records the time per
// allocation+free as each thread sees it (wall time / that thread's operations).
void frame_thread_scaling(const run_settings& settings, recorder& out) {
  const int batches = settings.full ? 400 : 100;
  const std::vector<int> counts =
      settings.full ? std::vector<int>{1, 2, 4, 8, 16} : std::vector<int>{1, 2, 4};
  run_rounds(settings, [&](bool measured) {
    for (int threads : counts) {
      const double wall = run_thread_team(threads, [&](int) {
        std::vector<void*> blocks(1000);
        for (int batch = 0; batch < batches; ++batch) allocation_only_ns(blocks, 64);
      });
      if (!measured) continue;
      const std::string label = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
      out.add_point("64 B", threads, label, "ns per alloc+free per thread",
                    wall / (batches * 1000.0));
    }
  });
}

// 1,000 allocations cycling through 7, 31 and 63 bytes, then their frees; records the
// time and the waste, (usable size - requested) / usable size, from malloc_usable_size.
void frame_alignment_stress(const run_settings& settings, recorder& out) {
  constexpr std::size_t requests[] = {7, 31, 63};
  const int batches = settings.full ? 2000 : 300;
  std::vector<void*> blocks(1000);
  double requested = 0, usable = 0;
  run_rounds(settings, [&](bool measured) {
    double allocate = 0;
    for (int batch = 0; batch < batches; ++batch) {
      const double start = monotonic_ns();
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        blocks[i] = std::malloc(requests[i % 3]);
        escape(blocks[i]);
      }
      allocate += monotonic_ns() - start;
      if (batch == 0) {
        requested = usable = 0;
        for (std::size_t i = 0; i < blocks.size(); ++i) {
          requested += static_cast<double>(requests[i % 3]);
          usable += static_cast<double>(malloc_usable_size(blocks[i]));
        }
      }
      for (void* block : blocks) std::free(block);
    }
    if (!measured) return;
    out.add("1,000 x malloc(7|31|63)", "ns", allocate / batches);
    out.add("waste", "%", 100.0 * (usable - requested) / usable);
  });
}

}  // namespace strata_bench
