// False sharing through the allocator (issue 21), after the well-known descriptions of
// the "cache-thrash" and "cache-scratch" allocator benchmarks: small objects that
// threads write hard, where a heap that puts two threads' objects in one 64-byte line
// makes every write bounce the line between their CPUs. Active: each thread allocates
// its own objects. Passive: one thread allocates an object per worker and hands it
// over; the worker frees it and allocates its own of the same size, which a heap that
// keeps the freed block for the freeing thread hands straight back.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cache_line_census.hpp"
#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t object_bytes = 8;
constexpr int writes_per_byte = 1000;

// How long each thread works: objects allocated one after another, each written
// `writes_per_byte` times per byte before its free.
int objects_per_thread(const run_settings& settings) {
  return settings.full ? 50000 : 10000;
}

// The thread counts: two threads, and one per CPU this process may use when that is more.
std::vector<int> thread_counts() {
  const int many = static_cast<int>(allowed_cpus().size());
  if (many > 2) return {2, many};
  return {2};
}

// The metric label of a thread count.
std::string threads_label(int threads) {
  return std::to_string(threads) + " threads";
}

// Increments every byte of the object again and again through a volatile pointer, so
// each read and write reaches the cache line, as a thread that owns a hot small object
// would.
void write_repeatedly(void* object) {
  auto* bytes = static_cast<volatile char*>(object);
  for (int pass = 0; pass < writes_per_byte; ++pass) {
    for (std::size_t k = 0; k < object_bytes; ++k) bytes[k] = static_cast<char>(bytes[k] + 1);
  }
}

// One thread's work: allocate an object, note where it lies, write it, free it.
void own_objects(int thread, int objects, cache_line_census& census) {
  for (int i = 0; i < objects; ++i) {
    void* object = std::malloc(object_bytes);
    census.note(thread, object, object_bytes);
    write_repeatedly(object);
    escape(object);
    std::free(object);
  }
}

// Records one measured round: its wall time, and the lines the threads' own objects
// shared (the largest count over the measured rounds, as a fact).
void record_round(recorder& out, int threads, double wall_ns, std::size_t shared,
                  std::size_t& most_shared) {
  out.add_point("8 B objects", threads, threads_label(threads), "ms", wall_ns / 1e6);
  most_shared = std::max(most_shared, shared);
  out.fact("64-byte lines shared by different threads' objects, " + threads_label(threads),
           static_cast<double>(most_shared));
}

}  // namespace

// Active false sharing: every thread allocates, writes and frees its own small objects.
void cell_false_sharing_active(const run_settings& settings, recorder& out) {
  const int objects = objects_per_thread(settings);
  for (int threads : thread_counts()) {
    cache_line_census census(threads, static_cast<std::size_t>(objects), object_bytes);
    std::size_t most_shared = 0;
    run_rounds(settings, [&](bool measured) {
      census.clear();
      const double wall =
          run_thread_team(threads, [&](int index) { own_objects(index, objects, census); });
      if (measured) record_round(out, threads, wall, census.shared_lines(), most_shared);
    });
  }
}

// Passive false sharing: the calling thread allocates one small object per worker, one
// after another (so they share lines), and hands them out; each worker frees the one it
// got, then allocates, writes and frees its own. Only the workers' own objects count
// toward the shared lines; the handed-out ones share by construction, recorded apart.
void cell_false_sharing_passive(const run_settings& settings, recorder& out) {
  const int objects = objects_per_thread(settings);
  for (int threads : thread_counts()) {
    cache_line_census census(threads, static_cast<std::size_t>(objects), object_bytes);
    cache_line_census handed_census(threads, 1, object_bytes);
    std::vector<void*> handed(static_cast<std::size_t>(threads));
    std::size_t most_shared = 0;
    run_rounds(settings, [&](bool measured) {
      census.clear();
      handed_census.clear();
      for (int index = 0; index < threads; ++index) {
        handed[index] = std::malloc(object_bytes);
        handed_census.note(index, handed[index], object_bytes);
      }
      const double wall = run_thread_team(threads, [&](int index) {
        std::free(handed[index]);
        own_objects(index, objects, census);
      });
      if (!measured) return;
      record_round(out, threads, wall, census.shared_lines(), most_shared);
      out.fact("64-byte lines shared by the handed-out objects, " + threads_label(threads),
               static_cast<double>(handed_census.shared_lines()));
    });
  }
}

}  // namespace strata_bench
