// The caching allocator over each backend (the CUDA instance skips without a
// GPU): copies through its blocks come back intact, a freed block is reused on
// its stream and, after a wait, on another, and empty_cache gives it all back.
#include "backends.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/caching_allocator.hpp>

#include <gtest/gtest.h>

namespace strata::gpu::testing {
namespace {

template <class Backend>
using caching_backend = device_test<Backend>;
TYPED_TEST_SUITE(caching_backend, backends, backend_names);

TYPED_TEST(caching_backend, CopiesReuseAndEmptyCache) {
  device& dev = *this->dev;
  constexpr std::size_t bytes = 256 * 1024;
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  {
    caching_allocator cache(dev);
    pinned_buffer pattern(dev, bytes);
    pinned_buffer back(dev, bytes);
    pattern.fill(42);

    void* p = cache.allocate(bytes, a);
    dev.copy_async(p, pattern.data(), bytes, copy_kind::host_to_device, a);
    cache.deallocate(p, bytes, a);
    // Reused at once on its stream: the copy back sees the copy in.
    void* q = cache.allocate(bytes, a);
    EXPECT_EQ(q, p);
    dev.copy_async(back.data(), q, bytes, copy_kind::device_to_host, a);
    dev.synchronize(a);
    EXPECT_TRUE(back.holds(42));
    cache.deallocate(q, bytes, a);

    // Borrowed by another stream after a wait, never blocking the host.
    void* r = cache.allocate(bytes, b);
    EXPECT_EQ(r, p);
    EXPECT_EQ(cache.stats().cross_stream_reuses, 1u);
    cache.deallocate(r, bytes, b);

    cache.empty_cache();
    EXPECT_EQ(cache.stats().all.reserved_bytes.current, 0);
    EXPECT_EQ(cache.stats().num_device_allocs, cache.stats().num_device_frees);
  }
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

}  // namespace
}  // namespace strata::gpu::testing
