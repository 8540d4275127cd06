// The caching allocator as a strata device resource: every spelling reaches
// the same cache, and alignments it cannot promise are refused.
#include "caching_fixture.hpp"

#include <strata/gpu/stream_ordered_resource.hpp>

#include <gtest/gtest.h>

namespace strata::gpu::testing {
namespace {

static_assert(device_memory_resource<caching_allocator>);

using caching_resource = caching_test;

// A CCCL-style stream reference: get() yields the handle.
struct stream_ref {
  void* handle;
  void* get() const noexcept { return handle; }
};

TEST_F(caching_resource, EverySpellingSharesTheCache) {
  caching_allocator& r = *cache;
  void* p = r.allocate(4 * kib, streams[0]);
  r.deallocate(p, 4 * kib, streams[0]);
  EXPECT_EQ(r.allocate(stream_ref{streams[0].handle}, 4 * kib), p);
  r.deallocate(stream_ref{streams[0].handle}, p, 4 * kib);
  EXPECT_EQ(r.allocate_async(4 * kib, 256, stream_ref{streams[0].handle}), p);
  r.deallocate_async(p, 4 * kib, 256, stream_ref{streams[0].handle});
  void* q = r.allocate_sync(4 * kib);
  r.deallocate_sync(q, 4 * kib);
  void* u = r.allocate(4 * kib, std::size_t{128});
  r.deallocate(u, 4 * kib, std::size_t{128});
  EXPECT_EQ(cache->stats().all.allocation.current, 0);
  EXPECT_TRUE(r == r);
  expect_consistent();
}

TEST_F(caching_resource, RefusesAlignmentsItCannotPromise) {
  EXPECT_THROW(cache->allocate(kib, 1024, streams[0]), device_error);
  EXPECT_THROW(cache->allocate(kib, 3, streams[0]), device_error);
  void* p = cache->allocate(kib, 64, streams[0]);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
  cache->deallocate(p);
}

}  // namespace
}  // namespace strata::gpu::testing
