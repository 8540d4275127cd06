// Seed 002 (Unified Allocator), its own subject: memory both the CPU and the GPU
// touch. Each scenario allocates a set of blocks, accesses them, frees them, with the
// phases timed (allocate / free / access / total, ms) twice: once accessed by the CPU,
// once by the GPU. Strategies, in turn on one device: malloc, managed memory without a
// pool (cudaMallocManaged), device memory (cudaMalloc), strata::gpu::managed_pool, and
// the same pool with prefetch.
//
// What an access is, per strategy (the seed does not say; this is what a program does):
// - CPU access: the host writes every byte and reads one word per cache line. Device
//   memory is first copied to a host buffer and back after.
// - GPU access: the host fills the block, then the GPU writes it (cudaMemsetAsync, the
//   stand-in for a kernel) and the host waits. malloc'd and device memory go through a
//   copy to the device; managed memory is touched in place, so its pages migrate; the
//   prefetching pool moves them ahead with prefetch (to the host before the host fills,
//   to the device before the GPU writes), which costs less per page than faults.
//
// Without a GPU the simulated device stands in with the seed's cudaMallocManaged cost
// (200 µs per allocate, 250 µs per free, from its tables), 20 µs per 64 KiB page moved
// by a fault and 3 µs per page moved by prefetch (about 3 and 20 GB/s); its device
// memsets and copies run on host memory. The strategy names say which backend ran.
#include <strata/gpu/managed_pool.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "gpu_backend.hpp"
#include "optimizer_barrier.hpp"
#include "thread_team.hpp"
#include "unified_block_sets.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

using strata::gpu::copy_kind;
using strata::gpu::device;
using strata::gpu::memory_location;
using strata::gpu::stream;

constexpr std::size_t megabyte = 1u << 20;

// The simulated stand-in for seed 002's device (see the file comment).
strata::gpu::simulated_config unified_stand_in() {
  strata::gpu::simulated_config config;
  config.capacity = std::size_t{4} << 30;
  config.allocate_latency = std::chrono::microseconds(200);
  config.free_latency = std::chrono::microseconds(250);
  config.managed.fault_migration = std::chrono::microseconds(20);
  config.managed.prefetch_migration = std::chrono::microseconds(3);
  return config;
}

// Who touches the memory in a pass; each side has pools of its own, so one side's
// pass does not inherit pages the other side's pass moved.
enum class side { cpu = 0, gpu = 1 };

// One strategy: how it allocates and frees, and where its memory lives.
struct strategy {
  std::string name;
  enum { host, managed, device_memory, pool, prefetching_pool } kind;
};

// A device, the pools over it, and the buffers that stage device memory.
struct bench_device {
  gpu_backend backend;
  // [side][0: plain, 1: prefetching]
  std::unique_ptr<strata::gpu::managed_pool> pools[2][2];
  std::vector<char> staging;  // the host side of device memory's copies
  void* scratch = nullptr;    // the device side of malloc'd memory's copies

  explicit bench_device(std::size_t largest_block)
      : backend(open_gpu_backend(unified_stand_in())),
        staging(largest_block),
        scratch(backend.device->allocate(largest_block)) {
    for (auto& per_side : pools)
      for (auto& pool : per_side) pool = std::make_unique<strata::gpu::managed_pool>(dev());
  }
  // The pools go after this, the device (declared first) after them.
  ~bench_device() { backend.device->deallocate(scratch); }
  bench_device(const bench_device&) = delete;
  bench_device& operator=(const bench_device&) = delete;

  device& dev() { return *backend.device; }

  strata::gpu::managed_pool& pool(side where, bool prefetching) {
    return *pools[static_cast<int>(where)][prefetching ? 1 : 0];
  }

  // The migration time the simulated device has charged so far (0 on a GPU).
  std::chrono::nanoseconds charged() {
    auto* simulated = dynamic_cast<strata::gpu::simulated_device*>(&dev());
    return simulated ? simulated->managed_stats().charged : std::chrono::nanoseconds{0};
  }

  std::vector<strategy> strategies() const {
    return {{"malloc", strategy::host},
            {on_backend(backend, "cudaMallocManaged"), strategy::managed},
            {on_backend(backend, "cudaMalloc"), strategy::device_memory},
            {on_backend(backend, "strata managed_pool"), strategy::pool},
            {on_backend(backend, "strata managed_pool + prefetch"), strategy::prefetching_pool}};
  }

  void* allocate(const strategy& s, std::size_t bytes, side where) {
    switch (s.kind) {
      case strategy::host:
        return std::malloc(bytes);
      case strategy::managed:
        return dev().allocate_managed(bytes);
      case strategy::device_memory:
        return dev().allocate(bytes);
      case strategy::pool:
        return pool(where, false).allocate(bytes, stream{});
      case strategy::prefetching_pool:
        return pool(where, true).allocate(bytes, stream{});
    }
    return nullptr;
  }

  void free(const strategy& s, void* p, std::size_t bytes, side where) {
    switch (s.kind) {
      case strategy::host:
        std::free(p);
        return;
      case strategy::managed:
        dev().deallocate_managed(p);
        return;
      case strategy::device_memory:
        dev().deallocate(p);
        return;
      case strategy::pool:
        pool(where, false).deallocate(p, bytes, stream{});
        return;
      case strategy::prefetching_pool:
        pool(where, true).deallocate(p, bytes, stream{});
        return;
    }
  }

  // The CPU-access phase for one block.
  std::uint64_t cpu_access(const strategy& s, char* p, std::size_t bytes, int value) {
    switch (s.kind) {
      case strategy::host:
        return write_and_read(p, bytes, value);
      case strategy::device_memory: {
        dev().copy_async(staging.data(), p, bytes, copy_kind::device_to_host, stream{});
        dev().synchronize(stream{});
        const std::uint64_t sum = write_and_read(staging.data(), bytes, value);
        dev().copy_async(p, staging.data(), bytes, copy_kind::host_to_device, stream{});
        dev().synchronize(stream{});
        return sum;
      }
      case strategy::prefetching_pool:
        pool(side::cpu, true).prefetch(p, bytes, memory_location::host, stream{});
        dev().synchronize(stream{});
        [[fallthrough]];
      case strategy::managed:
      case strategy::pool:
        dev().host_access(p, bytes);
        return write_and_read(p, bytes, value);
    }
    return 0;
  }

  // The GPU-access phase for one block: the host fills it, the GPU writes it.
  std::uint64_t gpu_access(const strategy& s, char* p, std::size_t bytes, int value) {
    std::uint64_t sum = 0;
    switch (s.kind) {
      case strategy::host:
        sum = write_and_read(p, bytes, value);
        dev().copy_async(scratch, p, bytes, copy_kind::host_to_device, stream{});
        dev().memset_async(scratch, value + 1, bytes, stream{});
        break;
      case strategy::device_memory:
        sum = write_and_read(staging.data(), bytes, value);
        dev().copy_async(p, staging.data(), bytes, copy_kind::host_to_device, stream{});
        dev().memset_async(p, value + 1, bytes, stream{});
        break;
      case strategy::managed:
      case strategy::pool:
        dev().host_access(p, bytes);
        sum = write_and_read(p, bytes, value);
        dev().memset_async(p, value + 1, bytes, stream{});
        break;
      case strategy::prefetching_pool:
        pool(side::gpu, true).prefetch(p, bytes, memory_location::host, stream{});
        dev().synchronize(stream{});
        dev().host_access(p, bytes);
        sum = write_and_read(p, bytes, value);
        pool(side::gpu, true).prefetch(p, bytes, memory_location::device, stream{});
        dev().memset_async(p, value + 1, bytes, stream{});
        break;
    }
    dev().synchronize(stream{});
    return sum;
  }
};

// Milliseconds of each phase of one pass, and of the access the migrations the
// simulated device charged (0 on a GPU).
struct phase_times {
  double allocate = 0, access = 0, free = 0, migration = 0;
};

// Allocate every block, access every block from `where`, free every block.
phase_times one_pass(bench_device& bench, const strategy& s, const std::vector<std::size_t>& sizes,
                     side where) {
  std::vector<char*> blocks(sizes.size());
  phase_times times;
  double start = monotonic_ns();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = static_cast<char*>(bench.allocate(s, sizes[i], where));
    escape(blocks[i]);
  }
  times.allocate = (monotonic_ns() - start) / 1e6;
  const auto charged_before = bench.charged();
  start = monotonic_ns();
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int value = static_cast<int>(i & 0x7f);
    sum += where == side::cpu ? bench.cpu_access(s, blocks[i], sizes[i], value)
                              : bench.gpu_access(s, blocks[i], sizes[i], value);
  }
  keep_value(sum);
  times.access = (monotonic_ns() - start) / 1e6;
  times.migration =
      std::chrono::duration<double, std::milli>(bench.charged() - charged_before).count();
  start = monotonic_ns();
  for (std::size_t i = 0; i < sizes.size(); ++i) bench.free(s, blocks[i], sizes[i], where);
  bench.dev().synchronize(stream{});
  times.free = (monotonic_ns() - start) / 1e6;
  return times;
}

// The seed's four columns under "CPU access: " or "GPU access: ".
void record(recorder& out, const std::string& strategy_name, side where, const phase_times& t,
            bool simulated) {
  const std::string prefix = where == side::cpu ? "CPU access: " : "GPU access: ";
  out.add_for(strategy_name, prefix + "allocate", "ms", t.allocate);
  out.add_for(strategy_name, prefix + "free", "ms", t.free);
  out.add_for(strategy_name, prefix + "access", "ms", t.access);
  out.add_for(strategy_name, prefix + "total", "ms", t.allocate + t.free + t.access);
  if (simulated)
    out.add_for(strategy_name, prefix + "access, of which migration", "ms", t.migration);
}

// What the device moved and charged, so the report shows where access time went.
void record_backend(recorder& out, bench_device& bench) {
  out.fact("backend", bench.backend.description +
                          (bench.backend.simulated
                               ? "; managed memory: 64 KiB pages, 20 µs per page moved by a "
                                 "fault, 3 µs per page moved by prefetch"
                               : ""));
  if (auto* simulated = dynamic_cast<strata::gpu::simulated_device*>(&bench.dev())) {
    const strata::gpu::managed_statistics moved = simulated->managed_stats();
    out.fact("pages faulted to the device", static_cast<double>(moved.faulted_to_device));
    out.fact("pages faulted to the host", static_cast<double>(moved.faulted_to_host));
    out.fact("pages prefetched to the device", static_cast<double>(moved.prefetched_to_device));
    out.fact("pages prefetched to the host", static_cast<double>(moved.prefetched_to_host));
  }
  std::size_t regions = 0;
  for (auto& per_side : bench.pools)
    for (auto& pool : per_side) regions += pool->statistics().pool.blocks.upstream_allocations;
  out.fact("managed_pool regions taken (4 pools)", static_cast<double>(regions));
}

// Every strategy, CPU then GPU access, in turn within each round.
void run_block_set(const run_settings& settings, recorder& out,
                   const std::vector<std::size_t>& sizes) {
  bench_device bench(*std::max_element(sizes.begin(), sizes.end()));
  const std::vector<strategy> all = bench.strategies();
  run_rounds(settings, [&](bool measured) {
    for (const strategy& s : all)
      for (side where : {side::cpu, side::gpu}) {
        const phase_times times = one_pass(bench, s, sizes, where);
        if (measured) record(out, s.name, where, times, bench.backend.simulated);
      }
  });
  record_backend(out, bench);
}

}  // namespace

void unified_managed_small(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_small_blocks());
}

void unified_managed_medium(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_medium_blocks());
}

void unified_managed_large(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_large_blocks());
}

void unified_managed_mixed(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_mixed_blocks());
}

void unified_managed_repeated_1mb(const run_settings& settings, recorder& out) {
  run_block_set(settings, out, unified_repeated_1mb_blocks());
}

// Allocate 1 MB, touch a byte on the host, free: 1,000 times through each strategy that
// serves unified memory (the pools, and cudaMallocManaged directly); µs per cycle, and
// the pool's speed-up over the direct path.
void unified_managed_pool_reuse(const run_settings& settings, recorder& out) {
  constexpr int repeats = 1000;
  bench_device bench(megabyte);
  const std::vector<strategy> all = bench.strategies();
  run_rounds(settings, [&](bool measured) {
    for (const strategy& s : all) {
      if (s.kind == strategy::device_memory) continue;  // not unified memory
      double allocate = 0, free = 0;
      for (int i = 0; i < repeats; ++i) {
        const double start = monotonic_ns();
        auto* block = static_cast<char*>(bench.allocate(s, megabyte, side::cpu));
        const double allocated = monotonic_ns();
        if (s.kind != strategy::host) bench.dev().host_access(block, 1);
        block[0] = 1;
        escape(block);
        bench.free(s, block, megabyte, side::cpu);
        free += monotonic_ns() - allocated;
        allocate += allocated - start;
      }
      if (!measured) continue;
      out.add_for(s.name, "allocate", "ms", allocate / 1e6);
      out.add_for(s.name, "free", "ms", free / 1e6);
      out.add_for(s.name, "total", "ms", (allocate + free) / 1e6);
      out.add_for(s.name, "µs per allocate+free", "µs", (allocate + free) / 1e3 / repeats);
    }
  });
  record_backend(out, bench);
}

// 4 threads each pass 32 small blocks (4 KB-1 MB) through allocate / CPU access / free 4
// times, then 8 threads 8 mixed blocks (4 KB-4 MB); the mean thread time and the wall
// time, per strategy that the host can touch directly.
void unified_managed_threads(const run_settings& settings, recorder& out) {
  bench_device shared(4 * megabyte);
  const std::vector<strategy> all = shared.strategies();
  run_rounds(settings, [&](bool measured) {
    for (const strategy& s : all) {
      if (s.kind == strategy::device_memory)
        continue;  // its one host staging buffer is not per thread
      for (const unified_team& team : unified_teams()) {
        std::vector<double> thread_ns(static_cast<std::size_t>(team.threads));
        const double wall = run_thread_team(team.threads, [&](int index) {
          const auto sizes =
              sizes_between(team.count, team.low, team.high, static_cast<unsigned>(index) + 10);
          const double start = monotonic_ns();
          for (int repeat = 0; repeat < 4; ++repeat) {
            std::vector<char*> blocks;
            for (std::size_t bytes : sizes)
              blocks.push_back(static_cast<char*>(shared.allocate(s, bytes, side::cpu)));
            std::uint64_t sum = 0;
            for (std::size_t i = 0; i < blocks.size(); ++i)
              sum += shared.cpu_access(s, blocks[i], sizes[i], index);
            keep_value(sum);
            for (std::size_t i = 0; i < blocks.size(); ++i)
              shared.free(s, blocks[i], sizes[i], side::cpu);
          }
          thread_ns[static_cast<std::size_t>(index)] = monotonic_ns() - start;
        });
        if (!measured) continue;
        double mean = 0;
        for (double ns : thread_ns) mean += ns / team.threads;
        out.add_for(s.name, std::string(team.name) + ": mean thread time", "ms", mean / 1e6);
        out.add_for(s.name, std::string(team.name) + ": total", "ms", wall / 1e6);
      }
    }
  });
  record_backend(out, shared);
}

}  // namespace strata_bench
