// strata_gpu_caching_bench: the caching allocator's hit path against the
// device's direct path, on the simulated device.
//
//   strata_gpu_caching_bench [latency_us]   (default 250, 000_'s cudaMalloc)
//
// Prints ns per allocate+free pair for cache hits (1 KiB, 64 KiB, 4 MiB, and
// a batch of ten 1 KiB blocks), for the direct path with the given allocation
// latency, and the ratio between them.
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/simulated.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using namespace strata::gpu;
using clock_type = std::chrono::steady_clock;

// The best of several timed runs of `rounds` calls to `body`, in ns per call,
// so a preempted run on a shared machine does not count.
template <class Body>
double best_ns(int runs, int rounds, Body body) {
  double best = 1e300;
  for (int run = 0; run < runs; ++run) {
    const auto start = clock_type::now();
    for (int i = 0; i < rounds; ++i) body();
    const std::chrono::duration<double, std::nano> took = clock_type::now() - start;
    best = std::min(best, took.count() / rounds);
  }
  return best;
}

// ns per allocate+free of `bytes` on one stream, after a first miss warmed the cache.
double cache_hit_ns(caching_allocator& cache, stream s, std::size_t bytes) {
  cache.deallocate(cache.allocate(bytes, s), bytes, s);
  return best_ns(7, 1'000'000, [&] { cache.deallocate(cache.allocate(bytes, s), bytes, s); });
}

// ns per block for ten 1 KiB blocks allocated, then freed (000_'s batch scenario).
double batch_ns(caching_allocator& cache, stream s) {
  std::array<void*, 10> blocks{};
  const auto round = [&] {
    for (void*& p : blocks) p = cache.allocate(1024, s);
    for (void* p : blocks) cache.deallocate(p, 1024, s);
  };
  round();
  return best_ns(7, 100'000, round) / 10;
}

}  // namespace

int main(int argc, char** argv) {
  const long latency_us = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 250;

  simulated_config config;
  config.backing = memory_backing::address_only;
  config.capacity = std::size_t{8} << 30;
  simulated_device fast(config);
  const stream s = fast.create_stream();
  {
    caching_allocator cache(fast);
    std::printf("simulated device, no latency: caching allocator hit, allocate+free\n");
    for (const std::size_t bytes : {std::size_t{1024}, std::size_t{64} << 10, std::size_t{4} << 20})
      std::printf("  %8zu bytes: %8.1f ns\n", bytes, cache_hit_ns(cache, s, bytes));
    std::printf("  10 x 1 KiB batch: %8.1f ns per block\n", batch_ns(cache, s));
  }
  fast.destroy_stream(s);

  config.allocate_latency = std::chrono::microseconds(latency_us);
  simulated_device slow(config);
  const stream t = slow.create_stream();
  const std::size_t bytes = std::size_t{64} << 10;
  const double direct = best_ns(3, 200, [&] { slow.deallocate(slow.allocate(bytes)); });
  double cached = 0;
  {
    caching_allocator cache(slow);
    cached = cache_hit_ns(cache, t, bytes);
  }
  slow.destroy_stream(t);
  std::printf("simulated device, %ld us per allocation, 64 KiB allocate+free:\n", latency_us);
  std::printf("  direct (device allocate + deallocate): %10.1f ns\n", direct);
  std::printf("  caching allocator hit:                 %10.1f ns\n", cached);
  std::printf("  speed-up:                              %10.0fx\n", direct / cached);
  return 0;
}
