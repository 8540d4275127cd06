// Uses the GPU half through an installed copy, on the simulated device (no GPU
// needed): every public GPU header together, a device pool (strata's bfc over
// device memory, whose misuse reports live in libstrata), the caching allocator
// and the tracking adaptor's transfer accounting.
#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/managed_pool.hpp>
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/gpu/tracking.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  strata::gpu::simulated_device dev;
  const strata::gpu::stream s = dev.create_stream();

  strata::gpu::tracking<strata::gpu::device_pool> pool(dev);
  std::vector<char> host(4096, 7), back(4096, 0);
  void* p = pool.allocate(host.size(), s);
  pool.copy(p, host.data(), host.size(), strata::gpu::copy_kind::host_to_device, s);
  pool.copy(back.data(), p, back.size(), strata::gpu::copy_kind::device_to_host, s);
  dev.synchronize(s);
  pool.deallocate(p, host.size(), s);

  strata::gpu::caching_allocator cache(dev);
  void* q = cache.allocate(1 << 20, s);
  cache.deallocate(q, 1 << 20, s);
  const bool reused = cache.allocate(1 << 20, s) == q;
  cache.deallocate(q, 1 << 20, s);
  cache.empty_cache();
  dev.synchronize(s);
  dev.destroy_stream(s);

  if (std::memcmp(host.data(), back.data(), host.size()) != 0 || !reused ||
      pool.transfers(strata::gpu::copy_kind::host_to_device).bytes != host.size()) {
    std::puts("FAIL: the GPU half through the install");
    return 1;
  }
  std::puts("strata::gpu: device pool, caching allocator and transfers work from the install");
  return 0;
}
