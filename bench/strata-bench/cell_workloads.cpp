// Seed 001 (Cell): single pairs 16 B-16 KB, batches of 1,000, 64 KB-4 MB pairs,
// 1 vs N threads, sequential and random traversal of separately allocated objects.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "size_label.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

// Average nanoseconds of `iterations` malloc(size)+free pairs on the calling thread.
static double pair_ns(std::size_t size, int iterations) {
  const double start = monotonic_ns();
  for (int i = 0; i < iterations; ++i) {
    void* block = std::malloc(size);
    escape(block);
    std::free(block);
  }
  return (monotonic_ns() - start) / iterations;
}

// One malloc followed at once by its free, 16 B to 16 KB.
void cell_single_pairs(const run_settings& settings, recorder& out) {
  const int iterations = settings.full ? 1'000'000 : 200'000;
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {16, 64, 128, 512, 1024, 4096, 16384}) {
      const double ns = pair_ns(size, iterations);
      if (measured) out.add(size_label(size), "ns/pair", ns);
    }
  });
}

// 1,000 separate allocations of 64 B or 1 KB, then their 1,000 frees.
void cell_batches(const run_settings& settings, recorder& out) {
  constexpr int batch = 1000;
  const int batches = settings.full ? 1000 : 200;
  std::vector<void*> blocks(batch);
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {64, 1024}) {
      const double start = monotonic_ns();
      for (int round = 0; round < batches; ++round) {
        for (auto& block : blocks) {
          block = std::malloc(size);
          escape(block);
        }
        for (void* block : blocks) std::free(block);
      }
      const double us = (monotonic_ns() - start) / batches / 1e3;
      if (measured) out.add(size_label(size) + " x 1,000", "µs/batch", us);
    }
  });
}

// One malloc followed at once by its free, 64 KB to 4 MB (memory not touched).
void cell_large_pairs(const run_settings& settings, recorder& out) {
  const int iterations = settings.full ? 20'000 : 4'000;
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {64u << 10, 256u << 10, 1u << 20, 4u << 20}) {
      const double ns = pair_ns(size, iterations);
      if (measured) out.add(size_label(size), "ns/pair", ns);
    }
  });
}

// malloc+free pairs of 64 B and 1 KB on 1 thread and on one thread per CPU; records
// the wall time divided by all threads' pairs (as the seed does).
void cell_thread_scaling(const run_settings& settings, recorder& out) {
  const int per_thread = settings.full ? 1'000'000 : 200'000;
  const int many = std::max<int>(2, static_cast<int>(allowed_cpus().size()));
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {64, 1024}) {
      for (int threads : {1, many}) {
        const double wall = run_thread_team(threads, [&](int) { pair_ns(size, per_thread); });
        if (!measured) continue;
        const std::string label = size_label(size) + ", " + std::to_string(threads) +
                                  (threads == 1 ? " thread" : " threads");
        out.add_point(size_label(size), threads, label, "ns/pair (wall / all pairs)",
                      wall / (static_cast<double>(per_thread) * threads));
      }
    }
  });
}

// A 64-byte object of the traversal tests.
struct object64 {
  std::uint64_t words[8];
};

// Allocates `count` objects with separate malloc calls and fills them.
static std::vector<object64*> allocate_objects(std::size_t count) {
  std::vector<object64*> objects(count);
  for (std::size_t i = 0; i < count; ++i) {
    objects[i] = static_cast<object64*>(std::malloc(sizeof(object64)));
    for (auto& word : objects[i]->words) word = i;
  }
  return objects;
}

// Nanoseconds to read every word of every object once, in the given pointer order.
static double traversal_ns(const std::vector<object64*>& order, int passes) {
  std::uint64_t sum = 0;
  const double start = monotonic_ns();
  for (int pass = 0; pass < passes; ++pass) {
    for (const object64* object : order) {
      for (std::uint64_t word : object->words) sum += word;
    }
  }
  keep_value(sum);
  return (monotonic_ns() - start) / passes;
}

// Allocates `count` objects one by one, then times reading them in allocation order or,
// with `shuffle`, in a fixed random order; frees them at the end.
static void traversal(const run_settings& settings, recorder& out, std::size_t count, bool shuffle,
                      const std::string& label, const std::string& unit, double unit_ns) {
  std::vector<object64*> objects = allocate_objects(count);
  std::vector<object64*> order = objects;
  if (shuffle) std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  const int passes = static_cast<int>(std::max<std::size_t>(1, 2'000'000 / count));
  run_rounds(settings, [&](bool measured) {
    const double ns = traversal_ns(order, passes);
    if (!measured) return;
    out.add(label, unit, ns / unit_ns);
    out.add("throughput", "GiB/s", count * sizeof(object64) / ns * 1e9 / (1u << 30),
            better::higher);
  });
  for (object64* object : objects) std::free(object);
}

// 1,000 separately allocated 64-byte objects read in allocation order.
void cell_sequential_traversal(const run_settings& settings, recorder& out) {
  traversal(settings, out, 1000, false, "1,000 objects, in order", "ns/traversal", 1.0);
}

// 100,000 separately allocated 64-byte objects read in a random order.
void cell_random_traversal(const run_settings& settings, recorder& out) {
  traversal(settings, out, 100'000, true, "100,000 objects, random order", "µs/traversal", 1e3);
}

}  // namespace strata_bench
