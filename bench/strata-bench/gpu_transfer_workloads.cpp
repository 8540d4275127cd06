// Seed 000 (XSigma), its transfer throughput: host-to-device and device-to-host
// copies of 1 KB, 64 KB, 1 MB and 16 MB, each waited for as the seed's were, from
// pageable host memory (malloc) and from page-locked buffers of strata's pinned_pool.
// The simulated device has no copy cost model: there a copy is a memcpy on the
// stream's worker thread, pageable and pinned differ only in the host buffer, and
// the figures are this machine's memory bandwidth, not a bus's.
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/transfer_meter.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "gpu_backend.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

namespace gpu = strata::gpu;

constexpr double mb = 1 << 20;

// One of the seed's sizes and how many copies of it a round makes.
struct transfer_size {
  const char* label;
  std::size_t bytes;
  int copies;
};

// The seed made 50 copies of each size; 16 MB gets fewer here, to keep a round short.
constexpr std::array<transfer_size, 4> sizes{{{"1 KB", 1024, 50},
                                              {"64 KB", std::size_t{64} << 10, 50},
                                              {"1 MB", std::size_t{1} << 20, 50},
                                              {"16 MB", std::size_t{16} << 20, 16}}};
constexpr std::size_t largest = std::size_t{16} << 20;

struct direction {
  const char* label;
  gpu::copy_kind kind;
};

constexpr std::array<direction, 2> directions{
    {{"H2D", gpu::copy_kind::host_to_device}, {"D2H", gpu::copy_kind::device_to_host}}};

// The stand-in for a GPU: the allocator scenario's latencies (only the one device
// buffer pays them), and host-backed memory so that copies move bytes.
gpu::simulated_config stand_in() {
  gpu::simulated_config config;
  config.capacity = std::size_t{256} << 20;
  config.backing = gpu::memory_backing::host;
  config.allocate_latency = std::chrono::microseconds(250);
  config.free_latency = std::chrono::microseconds(250);
  return config;
}

// Queues one copy between `host` and the device buffer, in the direction's order.
template <class Copy>
void copy_one(Copy&& copy, const direction& d, void* host, void* device_buffer, std::size_t bytes) {
  if (d.kind == gpu::copy_kind::host_to_device)
    copy(device_buffer, host, bytes);
  else
    copy(host, device_buffer, bytes);
}

// One round of one size in one direction. First the seed's measurement: each copy
// timed from taking its host buffer to the end of the stream synchronisation that
// waits for it, the bytes over those times the bandwidth the caller sees. Then the
// copies' own bandwidth: as many copies from one buffer queued back to back through
// a transfer_meter, whose stamps time each copy alone in stream order (kept out of
// the first loop, since on a GPU each stamp is a host callback of its own).
template <class Take, class Give>
void run_copies(recorder& out, bool measured, const std::string& strategy,
                const transfer_size& size, const direction& d, void* device_buffer,
                gpu::device& dev, gpu::stream s, Take take, Give give) {
  const auto plain = [&](void* dst, const void* src, std::size_t bytes) {
    dev.copy_async(dst, src, bytes, d.kind, s);
  };
  std::vector<double> times_ns(static_cast<std::size_t>(size.copies));
  double total_ns = 0;
  for (double& time_ns : times_ns) {
    const double start = monotonic_ns();
    void* host = take(size.bytes);
    copy_one(plain, d, host, device_buffer, size.bytes);
    dev.synchronize(s);
    give(host, size.bytes);
    time_ns = monotonic_ns() - start;
    total_ns += time_ns;
  }

  gpu::transfer_meter meter(dev);
  const auto metered = [&](void* dst, const void* src, std::size_t bytes) {
    meter.copy(dst, src, bytes, d.kind, s);
  };
  void* host = take(size.bytes);
  for (int i = 0; i < size.copies; ++i) copy_one(metered, d, host, device_buffer, size.bytes);
  dev.synchronize(s);
  give(host, size.bytes);

  if (!measured) return;
  const std::string label = std::string(d.label) + " " + size.label + ": ";
  const double bytes = static_cast<double>(size.bytes) * size.copies;
  out.add_for(strategy, label + "bandwidth, copy + wait", "MB/s", bytes / mb / (total_ns / 1e9),
              better::higher);
  out.add_for(strategy, label + "bandwidth in stream, back to back (transfer_meter)", "MB/s",
              meter.totals(d.kind).bandwidth() / mb, better::higher);
  std::vector<double>& samples = out.latency_for(strategy, label + "copy + wait");
  samples.insert(samples.end(), times_ns.begin(), times_ns.end());
}

// Whether 1 MB written into pageable memory comes back unchanged through the device
// into a pinned buffer.
bool round_trip_intact(gpu::device& dev, gpu::stream s, gpu::pinned_pool& staging,
                       void* device_buffer) {
  const std::size_t bytes = std::size_t{1} << 20;
  std::vector<unsigned char> sent(bytes);
  for (std::size_t i = 0; i < bytes; ++i) sent[i] = static_cast<unsigned char>(i * 131 + 7);
  void* received = staging.allocate(bytes);
  std::memset(received, 0, bytes);
  dev.copy_async(device_buffer, sent.data(), bytes, gpu::copy_kind::host_to_device, s);
  dev.copy_async(received, device_buffer, bytes, gpu::copy_kind::device_to_host, s);
  dev.synchronize(s);
  const bool intact = std::memcmp(received, sent.data(), bytes) == 0;
  staging.deallocate(received, bytes);
  return intact;
}

// Every size and direction from both kinds of host memory, in turn within each round.
void compare(const run_settings& settings, recorder& out, const gpu_backend& backend, gpu::stream s,
             void* device_buffer) {
  gpu::device& dev = *backend.device;
  const std::string pageable_name = on_backend(backend, "pageable malloc");
  const std::string pinned_name = on_backend(backend, "strata pinned_pool");
  // Written once, so no copy pays for faulting its pages in.
  std::vector<unsigned char> pageable(largest, 1);
  gpu::pinned_pool staging(dev);
  for (const transfer_size& size : sizes) {
    void* buffer = staging.allocate(size.bytes);
    std::memset(buffer, 1, size.bytes);
    staging.deallocate(buffer, size.bytes);
  }
  const auto take_pageable = [&](std::size_t) -> void* { return pageable.data(); };
  const auto give_pageable = [](void*, std::size_t) {};
  const auto take_pinned = [&](std::size_t bytes) { return staging.allocate(bytes); };
  const auto give_pinned = [&](void* p, std::size_t bytes) { staging.deallocate(p, bytes); };
  run_rounds(settings, [&](bool measured) {
    for (const transfer_size& size : sizes)
      for (const direction& d : directions) {
        run_copies(out, measured, pageable_name, size, d, device_buffer, dev, s, take_pageable,
                   give_pageable);
        run_copies(out, measured, pinned_name, size, d, device_buffer, dev, s, take_pinned,
                   give_pinned);
      }
  });
  out.fact("round trip pageable -> device -> pinned intact (1 MB)",
           round_trip_intact(dev, s, staging, device_buffer));
  const gpu::pinned_pool_statistics pool = staging.statistics();
  out.fact("pinned_pool buffers reused", static_cast<double>(pool.hits));
  out.fact("pinned_pool buffers taken from the device", static_cast<double>(pool.misses));
}

}  // namespace

// H2D and D2H copies of the seed's sizes from pageable and pinned host memory, on the
// backend present, with one device buffer of the largest size for all of them.
void xsigma_gpu_transfers(const run_settings& settings, recorder& out) {
  const gpu_backend backend = open_gpu_backend(stand_in());
  out.fact("backend", backend.description);
  out.fact("copy model", backend.simulated
                             ? "none: a copy is a memcpy on the stream's worker thread, so "
                               "these are this machine's memory bandwidth, not a bus's"
                             : "the CUDA runtime's cudaMemcpyAsync");
  gpu::device& dev = *backend.device;
  const gpu::stream s = dev.create_stream();
  void* device_buffer = dev.allocate(largest);
  compare(settings, out, backend, s, device_buffer);
  dev.deallocate(device_buffer);
  dev.destroy_stream(s);
}

}  // namespace strata_bench
