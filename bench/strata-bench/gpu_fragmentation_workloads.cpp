// GPU fragmentation (issue 37): how much device memory each strategy holds for
// two sequences that strand memory in a plain caching allocator. growing
// lengths: at each step a length grows by one, a tensor of length x 1 MiB is
// kept to the end and a workspace of length x 3 MiB is used and freed (PyTorch's
// motivating case for expandable segments); random lifetimes: tensors of
// log-uniform sizes (512 B to 32 MiB) on two streams, each freed on its stream
// after a random number of later allocations. Strategies: the caching allocator
// plain and with expandable segments, strata's device_pool, the device's
// stream-ordered pool (cudaMallocAsync) and direct device allocation (cudaMalloc).
// Held memory is the device's free memory before a fresh instance less its free
// memory after each call, so every strategy is measured alike on either backend.
#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "gpu_backend.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

namespace gpu = strata::gpu;

constexpr std::size_t mib = std::size_t{1} << 20;

// The stand-in for a GPU: cudaMalloc's cost as seed 000 measured it (250 µs, the
// same for a free and for each granule made by cuMemCreate), address-only memory
// of 8 GiB, so every strategy completes and none is cut short by the capacity.
gpu::simulated_config stand_in() {
  gpu::simulated_config config;
  config.capacity = std::size_t{8} << 30;
  config.backing = gpu::memory_backing::address_only;
  config.allocate_latency = std::chrono::microseconds(250);
  config.free_latency = std::chrono::microseconds(250);
  return config;
}

// One call of a sequence: allocate `bytes` on stream `on` into slot `slot`, or
// (bytes == 0) free what slot `slot` holds.
struct step {
  std::size_t bytes;
  int on;
  std::size_t slot;
};

// Growing lengths 10 to 30 on one stream: kept tensors stay to the end.
std::vector<step> growing_lengths() {
  std::vector<step> steps;
  std::size_t slot = 0;
  std::vector<std::size_t> kept;
  for (std::size_t length = 10; length <= 30; ++length) {
    kept.push_back(slot);
    steps.push_back({length * mib, 0, slot++});
    steps.push_back({length * 3 * mib, 0, slot});
    steps.push_back({0, 0, slot++});
  }
  for (const std::size_t k : kept) steps.push_back({0, 0, k});
  return steps;
}

// Random sizes and lifetimes on two streams (fixed seed): each block is freed,
// on the stream it was allocated on, after 1 to 64 later allocations.
std::vector<step> random_lifetimes() {
  std::mt19937_64 random(37);
  std::uniform_real_distribution<double> log_size(9.0, 25.0);  // 512 B .. 32 MiB
  std::uniform_int_distribution<int> lifetime(1, 64);
  std::vector<step> steps;
  std::vector<std::pair<int, std::size_t>> due;  // (allocation index it dies at, slot)
  std::vector<int> stream_of;
  for (int i = 0; i < 1500; ++i) {
    for (auto it = due.begin(); it != due.end();) {
      if (it->first > i) {
        ++it;
        continue;
      }
      steps.push_back({0, stream_of[it->second], it->second});
      it = due.erase(it);
    }
    const int on = static_cast<int>(random() % 2);
    const auto bytes = static_cast<std::size_t>(std::exp2(log_size(random)));
    stream_of.push_back(on);
    steps.push_back({bytes, on, stream_of.size() - 1});
    due.emplace_back(i + lifetime(random), stream_of.size() - 1);
  }
  for (const auto& [when, slot] : due) steps.push_back({0, stream_of[slot], slot});
  return steps;
}

// What one run of a sequence through a strategy reached.
struct run_figures {
  double seconds = 0;
  double peak_held = 0;       // device memory the strategy held at most
  double peak_requested = 0;  // bytes live at most
  double fragmentation = 0;   // share of the held memory not requested, at the held peak
  bool out_of_memory = false;
};

// Run `steps` through `resource`; with `watch`, read the device's free memory
// after every call (slow on a GPU: the timed runs do not).
template <class Resource>
run_figures run(Resource& resource, const std::vector<step>& steps, gpu::device& dev,
                const std::vector<gpu::stream>& streams, double free_before, bool watch) {
  run_figures figures;
  std::vector<void*> slots(steps.size(), nullptr);
  std::vector<std::size_t> sizes(steps.size(), 0);
  double live = 0;
  const double start = monotonic_ns();
  try {
    for (const step& s : steps) {
      if (s.bytes != 0) {
        slots[s.slot] = resource.allocate(s.bytes, streams[s.on]);
        sizes[s.slot] = s.bytes;
        live += static_cast<double>(s.bytes);
      } else {
        resource.deallocate(slots[s.slot], sizes[s.slot], streams[s.on]);
        slots[s.slot] = nullptr;
        live -= static_cast<double>(sizes[s.slot]);
      }
      figures.peak_requested = std::max(figures.peak_requested, live);
      if (!watch) continue;
      const double held = free_before - static_cast<double>(dev.memory().free);
      if (held > figures.peak_held) {
        figures.peak_held = held;
        figures.fragmentation = held > 0 ? 1.0 - live / held : 0.0;
      }
    }
  } catch (const gpu::device_error& e) {
    if (!e.is_out_of_memory()) throw;
    figures.out_of_memory = true;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i] != nullptr) resource.deallocate(slots[i], sizes[i], streams[0]);
  }
  for (const gpu::stream s : streams) dev.synchronize(s);
  figures.seconds = (monotonic_ns() - start) / 1e9;
  return figures;
}

// A strategy: its column name and how to make a fresh instance.
struct strategy {
  std::string name;
  std::function<void(const std::vector<step>&, bool, run_figures&)> run_fresh;
};

// A fresh instance per run, so each starts holding nothing.
template <class Make>
strategy make_strategy(std::string name, gpu::device& dev, const std::vector<gpu::stream>& streams,
                       Make make) {
  return {std::move(name),
          [&dev, &streams, make](const std::vector<step>& steps, bool watch, run_figures& out) {
            dev.synchronize();
            dev.trim_to(0);
            const double free_before = static_cast<double>(dev.memory().free);
            auto resource = make();
            out = run(*resource, steps, dev, streams, free_before, watch);
          }};
}

// Both sequences through every strategy: time per run (medians over rounds),
// then one watched run for the memory figures.
void compare(const run_settings& settings, recorder& out, const gpu_backend& backend) {
  gpu::device& dev = *backend.device;
  const std::vector<gpu::stream> streams{dev.create_stream(), dev.create_stream()};
  gpu::caching_config expandable;
  expandable.expandable_segments = true;
  const std::vector<strategy> strategies{
      make_strategy(on_backend(backend, "strata caching_allocator"), dev, streams,
                    [&dev] { return std::make_unique<gpu::caching_allocator>(dev); }),
      make_strategy(
          on_backend(backend, "strata caching_allocator, expandable segments"), dev, streams,
          [&dev, expandable] { return std::make_unique<gpu::caching_allocator>(dev, expandable); }),
      make_strategy(on_backend(backend, "strata device_pool"), dev, streams,
                    [&dev] { return std::make_unique<gpu::device_pool>(dev); }),
      make_strategy(on_backend(backend, "stream-ordered pool"), dev, streams,
                    [&dev] {
                      return std::make_unique<gpu::async_resource>(
                          dev, std::numeric_limits<std::size_t>::max());
                    }),
      make_strategy(on_backend(backend, "direct"), dev, streams,
                    [&dev] { return std::make_unique<gpu::device_resource>(dev); }),
  };
  const std::vector<std::pair<std::string, std::vector<step>>> sequences{
      {"growing lengths", growing_lengths()}, {"random lifetimes, 2 streams", random_lifetimes()}};
  run_rounds(settings, [&](bool measured) {
    for (const auto& [label, steps] : sequences)
      for (const strategy& s : strategies) {
        run_figures figures;
        s.run_fresh(steps, false, figures);
        if (measured) out.add_for(s.name, label + ": time", "ms", figures.seconds * 1e3);
      }
  });
  for (const auto& [label, steps] : sequences)
    for (const strategy& s : strategies) {
      run_figures figures;
      s.run_fresh(steps, true, figures);
      out.add_for(s.name, label + ": peak reserved", "MB", figures.peak_held / double(mib));
      out.add_for(s.name, label + ": peak allocated", "MB", figures.peak_requested / double(mib));
      out.add_for(s.name, label + ": peak reserved / peak allocated", "x",
                  figures.peak_requested > 0 ? figures.peak_held / figures.peak_requested : 0.0);
      out.add_for(s.name, label + ": fragmentation at peak", "%", 100.0 * figures.fragmentation);
      out.add_for(s.name, label + ": ran out of memory", "runs", figures.out_of_memory ? 1.0 : 0.0);
    }
  for (const gpu::stream s : streams) dev.destroy_stream(s);
}

}  // namespace

// Peak reserved, fragmentation at peak and time of five GPU strategies over the
// growing-lengths and random-lifetimes sequences, on the backend present.
void gpu_fragmentation(const run_settings& settings, recorder& out) {
  const gpu_backend backend = open_gpu_backend(stand_in());
  out.fact("backend", backend.description);
  compare(settings, out, backend);
}

}  // namespace strata_bench
