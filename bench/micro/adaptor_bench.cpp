// The cost of the resource adaptors over their upstream: allocate+free pairs
// through a bump upstream and the strata heap, bare and wrapped in statistics
// (plain and atomic counters) and tracking (on and compiled out), and seed
// 000's mixed stress through the heap with tracking on, off and absent.
//
// The statistics adaptor's cost per call is (wrapped pair - bare pair) / 2.
// strata-bench's `xsigma/tracking-overhead` reports the tracking figure for the
// report; this program is for A/B work on the adaptors.
//
//   build/<dir>/bench/micro/bench-adaptor_bench --benchmark_min_time=0.2
#include <strata/resource.hpp>
#include <strata/statistics.hpp>
#include <strata/tracking.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

// A bump upstream over a fixed buffer: the cheapest possible allocate, so the
// adaptor's own instructions dominate the pair.
class bump_upstream {
 public:
  bump_upstream() : buffer_(std::size_t{1} << 20) {}
  // Bump the cursor, wrapping to the start near the end (blocks are dead by then).
  void* allocate(std::size_t bytes, std::size_t) {
    if (cursor_ + bytes > buffer_.size()) cursor_ = 0;
    void* p = buffer_.data() + cursor_;
    cursor_ += (bytes + 15) & ~std::size_t{15};
    return p;
  }
  void deallocate(void*, std::size_t, std::size_t) noexcept {}
  bool is_equal(const bump_upstream& other) const noexcept { return this == &other; }

 private:
  std::vector<unsigned char> buffer_;
  std::size_t cursor_ = 0;
};

// One 64-byte allocate and free per iteration through `Resource`. The
// resource's address escapes, so its counters live in memory as in a program
// (not in registers the compiler could sink out of the loop).
template <class Resource>
void pair_64(benchmark::State& state) {
  Resource resource;
  Resource* escaped = &resource;
  benchmark::DoNotOptimize(escaped);
  for (auto _ : state) {
    void* p = resource.allocate(64, 16);
    benchmark::DoNotOptimize(p);
    resource.deallocate(p, 64, 16);
  }
  state.SetItemsProcessed(state.iterations());
}

using bump = bump_upstream;
using heap = strata::heap_resource;
BENCHMARK(pair_64<bump>)->Name("pair64/bump");
BENCHMARK(pair_64<strata::statistics<bump>>)->Name("pair64/statistics<bump>");
BENCHMARK(pair_64<strata::statistics<bump, true>>)->Name("pair64/statistics_atomic<bump>");
BENCHMARK(pair_64<heap>)->Name("pair64/heap");
BENCHMARK(pair_64<strata::statistics<heap>>)->Name("pair64/statistics<heap>");
BENCHMARK(pair_64<strata::statistics<heap, true>>)->Name("pair64/statistics_atomic<heap>");
BENCHMARK(pair_64<strata::tracking<heap, false>>)->Name("pair64/tracking_off<heap>");
BENCHMARK(pair_64<strata::tracking<heap, true>>)->Name("pair64/tracking_on<heap>");

// Seed 000's mixed stress: 10,000 allocations of 64 B-1 MB interleaved with
// frees of random live blocks (p = 0.4), each block filled on allocation.
template <class Resource>
void mixed_stress(benchmark::State& state) {
  Resource resource;
  Resource* escaped = &resource;
  benchmark::DoNotOptimize(escaped);
  struct block {
    void* data;
    std::size_t size;
  };
  std::vector<block> live;
  live.reserve(10'000);
  for (auto _ : state) {
    std::mt19937_64 random(2025);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<std::size_t> size_of(64, 1 << 20);
    const auto release = [&](std::size_t index) {
      resource.deallocate(live[index].data, live[index].size, 16);
      live[index] = live.back();
      live.pop_back();
    };
    for (int made = 0; made < 10'000;) {
      if (!live.empty() && unit(random) < 0.4) {
        release(random() % live.size());
        continue;
      }
      const std::size_t size = size_of(random);
      void* p = resource.allocate(size, 16);
      std::memset(p, made & 0xff, size);
      live.push_back({p, size});
      ++made;
    }
    while (!live.empty()) release(live.size() - 1);
  }
}
BENCHMARK(mixed_stress<heap>)->Name("mixed_stress/heap")->Unit(benchmark::kMillisecond);
BENCHMARK(mixed_stress<strata::tracking<heap, false>>)
    ->Name("mixed_stress/tracking_off<heap>")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(mixed_stress<strata::tracking<heap, true>>)
    ->Name("mixed_stress/tracking_on<heap>")
    ->Unit(benchmark::kMillisecond);

}  // namespace
