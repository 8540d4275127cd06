// An allocate+deallocate loop through the GPU tracking adaptor for instruction
// counting (bench/callgrind/gpu_tracking.sh): `callgrind-gpu_tracking_pair MODE N`
// runs N pairs in run() over a device_pool on an address-only simulated device,
// MODE `bare` (the pool alone), `off` (tracking<device_pool, false>), `exact`
// (tracking<device_pool>) or `sampled` (1 per 512 KiB). The synchronous forms,
// so no event query makes one run differ from the next; a window of 64 live
// blocks, the oldest freed first, as the host driver's.
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/gpu/tracking.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

using strata::gpu::device_pool;
using strata::gpu::tracking;

// The size of the i-th block of the loop.
std::size_t size_of(int i) {
  return 64 + 16 * static_cast<std::size_t>(i % 8);
}

// The measured loop; out of line so callgrind can collect it alone.
template <class Resource>
[[gnu::noinline]] std::size_t run(Resource& resource, int n) {
  constexpr int window = 64;
  void* live[window] = {};
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) {
    void*& slot = live[i % window];
    if (slot != nullptr) resource.deallocate_sync(slot, size_of(i - window));
    slot = resource.allocate_sync(size_of(i));
    total += reinterpret_cast<std::uintptr_t>(slot) & 1;
  }
  for (int i = 0; i < window; ++i)
    if (live[i] != nullptr) resource.deallocate_sync(live[i], size_of(n - window + i));
  return total;
}

// Warm up (the first pairs set the pool, the thread and the table up), then measure.
template <class Resource, class... Options>
int measure(int n, Options... options) {
  strata::gpu::simulated_config config;
  config.backing = strata::gpu::memory_backing::address_only;
  strata::gpu::simulated_device dev(config);
  Resource resource(dev, options...);
  run(resource, 1000);
  return run(resource, n) == 1 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int n = std::atoi(argv[2]);
  if (std::strcmp(argv[1], "bare") == 0) return measure<device_pool>(n);
  if (std::strcmp(argv[1], "off") == 0) return measure<tracking<device_pool, false>>(n);
  if (std::strcmp(argv[1], "exact") == 0) return measure<tracking<device_pool>>(n);
  if (std::strcmp(argv[1], "sampled") == 0)
    return measure<tracking<device_pool>>(
        n, strata::tracking_options{.sample_bytes = 512 * 1024, .seed = 1});
  return 2;
}
