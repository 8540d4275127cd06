// Seed 001 (Cell), strata's fixed-size pools beside malloc and std::pmr: traversal of
// 64-byte objects from a strata pool in allocation order and in random order, and
// allocate+free pairs of one 64-byte object.
#include <strata/pool.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "optimizer_barrier.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// A 64-byte object, as in the malloc traversal scenarios.
struct pooled_object {
  std::uint64_t words[8];
};

using unchecked_pool = strata::fixed_pool<strata::malloc_resource, strata::pool_config{false}>;
using unchecked_object_pool = strata::object_pool<pooled_object, strata::malloc_resource,
                                                  strata::no_lock, strata::pool_config{false}>;

// Nanoseconds to read every word of every object once, in the given order.
double traversal_ns(const std::vector<pooled_object*>& order, int passes) {
  std::uint64_t sum = 0;
  const double start = monotonic_ns();
  for (int pass = 0; pass < passes; ++pass) {
    for (const pooled_object* object : order) {
      for (std::uint64_t word : object->words) sum += word;
    }
  }
  keep_value(sum);
  return (monotonic_ns() - start) / passes;
}

// Objects from `allocate`, filled; in allocation order, or shuffled with a fixed seed.
template <class Allocate>
std::vector<pooled_object*> make_objects(std::size_t count, bool shuffle, Allocate allocate) {
  std::vector<pooled_object*> objects(count);
  for (std::size_t i = 0; i < count; ++i) {
    objects[i] = static_cast<pooled_object*>(allocate());
    for (auto& word : objects[i]->words) word = i;
  }
  if (shuffle) std::shuffle(objects.begin(), objects.end(), std::mt19937_64(1));
  return objects;
}

// One traversal case: `count` objects, in order or not, for the pool and for malloc.
void traversal_case(const run_settings& settings, recorder& out, std::size_t count, bool shuffle,
                    const std::string& label, const std::string& unit, double unit_ns) {
  unchecked_pool pool(sizeof(pooled_object), alignof(pooled_object));
  const auto pooled = make_objects(count, shuffle, [&] { return pool.allocate(); });
  const auto separate =
      make_objects(count, shuffle, [] { return std::malloc(sizeof(pooled_object)); });
  const int passes = static_cast<int>(std::max<std::size_t>(1, 2'000'000 / count));
  run_rounds(settings, [&](bool measured) {
    const double pool_ns = traversal_ns(pooled, passes);
    const double malloc_ns = traversal_ns(separate, passes);
    if (!measured) return;
    out.add_for("strata fixed_pool", label, unit, pool_ns / unit_ns);
    out.add_for("malloc", label, unit, malloc_ns / unit_ns);
  });
  for (pooled_object* object : separate) std::free(object);
}

// Average nanoseconds of `iterations` calls of `pair` (one allocate and its free).
template <class Pair>
double pair_ns(int iterations, Pair pair) {
  const double start = monotonic_ns();
  for (int i = 0; i < iterations; ++i) pair();
  return (monotonic_ns() - start) / iterations;
}

}  // namespace

// 1,000 pooled objects read in allocation order and 100,000 in a fixed random order,
// beside the same objects from separate malloc calls.
void pool_traversal(const run_settings& settings, recorder& out) {
  traversal_case(settings, out, 1000, false, "1,000 objects, in order", "ns/traversal", 1.0);
  traversal_case(settings, out, 100'000, true, "100,000 objects, random order", "µs/traversal",
                 1e3);
}

// One 64-byte object allocated and freed at once: object_pool<T> create+destroy,
// fixed_pool allocate+deallocate, std::pmr::unsynchronized_pool_resource and malloc.
void pool_pairs(const run_settings& settings, recorder& out) {
  const int iterations = settings.full ? 2'000'000 : 500'000;
  unchecked_object_pool objects;
  unchecked_pool pool(sizeof(pooled_object), alignof(pooled_object));
  std::pmr::unsynchronized_pool_resource resource;
  const std::string label = "64 B object, allocate+free";
  run_rounds(settings, [&](bool measured) {
    const double object_ns = pair_ns(iterations, [&] {
      pooled_object* object = objects.create();
      escape(object);
      objects.destroy(object);
    });
    const double pool_ns = pair_ns(iterations, [&] {
      void* block = pool.allocate();
      escape(block);
      pool.deallocate(block);
    });
    const double resource_ns = pair_ns(iterations, [&] {
      void* block = resource.allocate(sizeof(pooled_object), alignof(pooled_object));
      escape(block);
      resource.deallocate(block, sizeof(pooled_object), alignof(pooled_object));
    });
    const double malloc_ns = pair_ns(iterations, [&] {
      void* block = std::malloc(sizeof(pooled_object));
      escape(block);
      std::free(block);
    });
    if (!measured) return;
    out.add_for("strata object_pool<T>", label, "ns/pair", object_ns);
    out.add_for("strata fixed_pool", label, "ns/pair", pool_ns);
    out.add_for("pmr::unsynchronized_pool", label, "ns/pair", resource_ns);
    out.add_for("malloc", label, "ns/pair", malloc_ns);
  });
}

}  // namespace strata_bench
