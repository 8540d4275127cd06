// Seed 000 (XSigma), its GPU allocator comparison: direct device allocation
// (cudaMalloc), a pre-allocated pool and a stream-aware caching allocator, at 1 KB,
// 64 KB, 4 MB and a batch of ten 1 KB blocks. Here: the device's own allocate
// (device_resource), its stream-ordered pool (cudaMallocAsync, async_resource),
// strata's device_pool (bfc over one 64 MB reservation, the seed's pool size) and
// strata's caching_allocator, on one stream of whichever backend gpu_backend found.
#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include "cycle_clock.hpp"
#include "gpu_backend.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

namespace gpu = strata::gpu;

constexpr std::size_t pool_reserve = std::size_t{64} << 20;
constexpr double mb = 1 << 20;

// One of the seed's cases: a block size and how many blocks are live at once.
struct allocation_case {
  const char* label;
  std::size_t bytes;
  int blocks;
};

constexpr int most_blocks = 10;
constexpr std::array<allocation_case, 4> cases{{{"1 KB", 1024, 1},
                                                {"64 KB", std::size_t{64} << 10, 1},
                                                {"4 MB", std::size_t{4} << 20, 1},
                                                {"10 x 1 KB batch", 1024, most_blocks}}};

// The stand-in for a GPU: cudaMalloc's cost as seed 000 measured it (about 250 µs),
// the same for a free; address-only memory, since no block is ever touched.
gpu::simulated_config stand_in() {
  gpu::simulated_config config;
  config.capacity = std::size_t{8} << 30;
  config.backing = gpu::memory_backing::address_only;
  config.allocate_latency = std::chrono::microseconds(250);
  config.free_latency = std::chrono::microseconds(250);
  return config;
}

// Requests served so far, and how many of them needed memory from the device.
struct request_counts {
  double requests = 0;
  double from_device = 0;
};

// The caching allocator counts its hits and misses itself.
request_counts counts(const gpu::caching_allocator& cache) {
  const gpu::caching_stats s = cache.stats();
  return {static_cast<double>(s.cache_hits + s.cache_misses), static_cast<double>(s.cache_misses)};
}

// The pool serves a request from bfc or from a block still pending on a stream;
// only a new region comes from the device.
request_counts counts(const gpu::device_pool& pool) {
  const gpu::device_pool_statistics s = pool.statistics();
  return {static_cast<double>(s.blocks.allocations + s.same_stream_reuses + s.cross_stream_reuses),
          static_cast<double>(s.blocks.upstream_allocations)};
}

// The device's own stream-ordered pool keeps no counts to read back.
template <class Resource>
concept keeps_counts = requires(const Resource& r) {
  counts(r);
};

// Microseconds per block allocated and freed: `repeats` times, the case's blocks
// allocated on `s`, then freed on it; the stream is synchronised before the clock
// stops, so work a stream-ordered free left queued is paid for too.
template <class Resource>
double us_per_block(Resource& resource, const allocation_case& c, int repeats, gpu::device& dev,
                    gpu::stream s) {
  std::array<void*, most_blocks> live{};
  const double start = monotonic_ns();
  for (int i = 0; i < repeats; ++i) {
    for (int b = 0; b < c.blocks; ++b) live[b] = resource.allocate(c.bytes, s);
    for (int b = 0; b < c.blocks; ++b) resource.deallocate(live[b], c.bytes, s);
  }
  dev.synchronize(s);
  return (monotonic_ns() - start) / 1e3 / (repeats * c.blocks);
}

// One strategy's round of one case, about `blocks` blocks: time per block, the
// throughput it makes, and the cache-hit rate where it is known.
template <class Resource>
void run_case(recorder& out, bool measured, const std::string& strategy, Resource& resource,
              const allocation_case& c, int blocks, gpu::device& dev, gpu::stream s) {
  request_counts before;
  if constexpr (keeps_counts<Resource>) before = counts(resource);
  const double us = us_per_block(resource, c, std::max(1, blocks / c.blocks), dev, s);
  if (!measured) return;
  const std::string label = std::string(c.label) + ": ";
  out.add_for(strategy, label + "allocate+free", "µs/block", us);
  out.add_for(strategy, label + "throughput", "pairs/s", 1e6 / us, better::higher);
  if constexpr (keeps_counts<Resource>) {
    const request_counts after = counts(resource);
    const double from_device = after.from_device - before.from_device;
    out.add_for(strategy, label + "cache-hit rate", "%",
                100.0 * (1.0 - from_device / (after.requests - before.requests)), better::higher);
  } else if constexpr (std::same_as<Resource, gpu::device_resource>) {
    // Direct allocation caches nothing: every request is a device allocation.
    out.add_for(strategy, label + "cache-hit rate", "%", 0.0, better::higher);
  }
}

// Device memory a fresh instance of a strategy holds beyond the bytes requested while
// the case's blocks are live: the device's free memory before the instance less its
// free memory then, so every strategy is measured alike on either backend. The
// device's stream-ordered pool is trimmed first, so none of its cache counts.
template <class Make>
double overhead_mb(gpu::device& dev, gpu::stream s, const allocation_case& c, Make make) {
  dev.synchronize();
  dev.trim_to(0);
  const double free_before = static_cast<double>(dev.memory().free);
  double held = 0;
  {
    auto resource = make();
    std::array<void*, most_blocks> live{};
    for (int b = 0; b < c.blocks; ++b) live[b] = resource->allocate(c.bytes, s);
    dev.synchronize();
    held = free_before - static_cast<double>(dev.memory().free);
    for (int b = 0; b < c.blocks; ++b) resource->deallocate(live[b], c.bytes, s);
  }
  // A GPU may serve a small block from pages it had mapped already: that is no overhead.
  return std::max(0.0, held - static_cast<double>(c.bytes) * c.blocks) / mb;
}

// Every case through the four strategies, in turn within each round.
void compare(const run_settings& settings, recorder& out, const gpu_backend& backend,
             gpu::stream s) {
  gpu::device& dev = *backend.device;
  const std::string direct_name = on_backend(backend, "direct");
  const std::string async_name = on_backend(backend, "stream-ordered pool");
  const std::string pool_name = on_backend(backend, "strata device_pool");
  const std::string cache_name = on_backend(backend, "strata caching_allocator");
  // Each direct block costs the device's latency twice: far fewer of them.
  const int direct_blocks = settings.full ? 100 : 40;
  const int cached_blocks = settings.full ? 50'000 : 10'000;

  gpu::device_resource direct(dev);
  gpu::async_resource async(dev, std::numeric_limits<std::size_t>::max());
  gpu::device_pool pool(dev, {.reserve_bytes = pool_reserve});
  gpu::caching_allocator cache(dev);
  run_rounds(settings, [&](bool measured) {
    for (const allocation_case& c : cases) {
      run_case(out, measured, direct_name, direct, c, direct_blocks, dev, s);
      run_case(out, measured, async_name, async, c, cached_blocks, dev, s);
      run_case(out, measured, pool_name, pool, c, cached_blocks, dev, s);
      run_case(out, measured, cache_name, cache, c, cached_blocks, dev, s);
    }
  });

  for (const allocation_case& c : cases) {
    const std::string label = std::string(c.label) + ": overhead";
    const auto add = [&](const std::string& strategy, double value) {
      out.add_for(strategy, label, "MB", value);
    };
    add(direct_name,
        overhead_mb(dev, s, c, [&] { return std::make_unique<gpu::device_resource>(dev); }));
    add(async_name, overhead_mb(dev, s, c, [&] {
          return std::make_unique<gpu::async_resource>(dev,
                                                       std::numeric_limits<std::size_t>::max());
        }));
    add(pool_name, overhead_mb(dev, s, c, [&] {
          return std::make_unique<gpu::device_pool>(
              dev, gpu::device_pool_config{.reserve_bytes = pool_reserve});
        }));
    add(cache_name,
        overhead_mb(dev, s, c, [&] { return std::make_unique<gpu::caching_allocator>(dev); }));
  }
  out.fact("caching_allocator segments taken from the device",
           static_cast<double>(cache.stats().num_device_allocs));
  out.fact("device_pool regions", static_cast<double>(pool.statistics().blocks.regions));
}

}  // namespace

// The seed's four cases through direct allocation, the device's stream-ordered pool,
// strata's device_pool and strata's caching_allocator, on the backend present.
void xsigma_gpu_allocators(const run_settings& settings, recorder& out) {
  const gpu_backend backend = open_gpu_backend(stand_in());
  out.fact("backend", backend.description);
  const gpu::stream s = backend.device->create_stream();
  compare(settings, out, backend, s);
  backend.device->destroy_stream(s);
}

}  // namespace strata_bench
