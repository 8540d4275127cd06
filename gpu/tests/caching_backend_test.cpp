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

// Expandable segments map and unmap through the backend's virtual memory
// (the driver's calls on CUDA): a copy through a block that grew the segment
// comes back intact, and empty_cache unmaps the free end.
TYPED_TEST(caching_backend, ExpandableSegmentsGrowAndShrink) {
  device& dev = *this->dev;
  constexpr std::size_t bytes = std::size_t{12} << 20;
  const stream a = dev.create_stream();
  {
    caching_config config;
    config.expandable_segments = true;
    caching_allocator cache(dev, config);
    pinned_buffer pattern(dev, bytes);
    pinned_buffer back(dev, bytes);
    pattern.fill(5);
    void* first = cache.allocate(bytes / 2, a);
    cache.deallocate(first, bytes / 2, a);
    void* p = cache.allocate(bytes, a);
    EXPECT_EQ(p, first);  // the free end grew in place
    dev.copy_async(p, pattern.data(), bytes, copy_kind::host_to_device, a);
    dev.copy_async(back.data(), p, bytes, copy_kind::device_to_host, a);
    dev.synchronize(a);
    EXPECT_TRUE(back.holds(5));
    EXPECT_EQ(cache.stats().all.segment.current, 1);
    cache.deallocate(p, bytes, a);
    cache.empty_cache();
    EXPECT_EQ(cache.stats().all.reserved_bytes.current, 0);
    EXPECT_EQ(cache.stats().all.segment.current, 0);
  }
  dev.destroy_stream(a);
}

// A block another stream borrows carries what the first stream's copy left in
// it: the borrowing stream waited for that copy, and the host never did.
TYPED_TEST(caching_backend, ABorrowedBlockSeesTheFirstStreamsCopy) {
  device& dev = *this->dev;
  constexpr std::size_t bytes = 512 * 1024;
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  {
    caching_allocator cache(dev);
    pinned_buffer pattern(dev, bytes), back(dev, bytes);
    pattern.fill(17);
    void* p = cache.allocate(bytes, a);
    dev.copy_async(p, pattern.data(), bytes, copy_kind::host_to_device, a);
    cache.deallocate(p, bytes, a);
    void* q = cache.allocate(bytes, b);
    ASSERT_EQ(q, p);
    dev.copy_async(back.data(), q, bytes, copy_kind::device_to_host, b);
    dev.synchronize(b);
    EXPECT_TRUE(back.holds(17));
    cache.deallocate(q, bytes, b);
    dev.synchronize();
  }
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

// A CUDA graph captured with the allocator's graph pool: the capture takes
// its blocks from memory set aside before it, and every replay moves the data.
TYPED_TEST(caching_backend, AGraphCapturedWithAGraphPoolReplays) {
  device& dev = *this->dev;
  constexpr std::size_t bytes = 64 * 1024;
  const stream s = dev.create_stream();
  {
    caching_config config;
    config.graph_pool_reserve = std::size_t{4} << 20;
    caching_allocator cache(dev, config);
    pinned_buffer in(dev, bytes), out(dev, bytes);
    const graph_pool_id pool{0, 7};
    cache.begin_allocate_to_pool(pool, [s](stream candidate) { return candidate == s; });
    dev.begin_capture(s, capture_mode::global);
    void* staging = cache.allocate(bytes, s);
    dev.copy_async(staging, in.data(), bytes, copy_kind::host_to_device, s);
    dev.copy_async(out.data(), staging, bytes, copy_kind::device_to_host, s);
    const graph g = dev.end_capture(s);
    cache.end_allocate_to_pool(pool);
    for (unsigned round = 1; round <= 3; ++round) {
      in.fill(round);
      dev.launch(g, s);
      dev.synchronize(s);
      EXPECT_TRUE(out.holds(round)) << "replay " << round;
    }
    dev.destroy_graph(g);
    cache.deallocate(staging, bytes, s);
    cache.release_pool(pool);
    EXPECT_EQ(cache.stats().num_ooms, 0u);
  }
  dev.destroy_stream(s);
}

// A stream announced before its destruction: its blocks come back to the
// cache once its work ran, for any stream.
TYPED_TEST(caching_backend, ADestroyedStreamsBlocksComeBackAfterItsWork) {
  device& dev = *this->dev;
  constexpr std::size_t bytes = 256 * 1024;
  const stream other = dev.create_stream();
  {
    caching_allocator cache(dev);
    pinned_buffer pattern(dev, bytes), back(dev, bytes);
    pattern.fill(23);
    const stream doomed = dev.create_stream();
    void* p = cache.allocate(bytes, doomed);
    dev.copy_async(p, pattern.data(), bytes, copy_kind::host_to_device, doomed);
    cache.deallocate(p, bytes, doomed);
    cache.stream_destroyed(doomed);
    dev.destroy_stream(doomed);
    dev.synchronize();
    void* q = cache.allocate(bytes, other);
    EXPECT_EQ(q, p);
    dev.copy_async(back.data(), q, bytes, copy_kind::device_to_host, other);
    dev.synchronize(other);
    EXPECT_TRUE(back.holds(23));
    cache.deallocate(q, bytes, other);
  }
  dev.destroy_stream(other);
}

}  // namespace
}  // namespace strata::gpu::testing
