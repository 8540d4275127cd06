// The host-resource concept, the shipped upstreams and the std::pmr bridge.
#include <strata/resource.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory_resource>
#include <string>
#include <vector>

namespace {

using strata::heap_resource;
using strata::malloc_resource;
using strata::new_delete_resource;
using strata::resource_ref;

static_assert(strata::host_resource<malloc_resource>);
static_assert(strata::host_resource<new_delete_resource>);
static_assert(strata::host_resource<heap_resource>);
static_assert(strata::host_resource<strata::upstream_ref<malloc_resource>>);
static_assert(strata::host_resource<std::pmr::memory_resource>);
static_assert(strata::host_resource<resource_ref>);
static_assert(strata::releasing_resource<heap_resource>);
static_assert(!strata::releasing_resource<malloc_resource>);
static_assert(!strata::host_resource<int>);

template <strata::host_resource R>
void expect_aligned_writable_blocks(R& resource) {
  for (std::size_t alignment = 1; alignment <= 4096; alignment *= 2) {
    void* p = resource.allocate(1000, alignment);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u) << alignment;
    std::memset(p, 0x5a, 1000);
    resource.deallocate(p, 1000, alignment);
  }
}

TEST(Resource, UpstreamsGiveAlignedWritableBlocks) {
  malloc_resource m;
  new_delete_resource n;
  heap_resource h;
  expect_aligned_writable_blocks(m);
  expect_aligned_writable_blocks(n);
  expect_aligned_writable_blocks(h);
}

TEST(Resource, BadAlignmentThrowsInvalidArgument) {
  malloc_resource m;
  heap_resource h;
  EXPECT_THROW((void)m.allocate(64, 48), std::invalid_argument);
  EXPECT_THROW((void)h.allocate(64, 0), std::invalid_argument);
}

TEST(Resource, ExhaustionThrowsBadAlloc) {
#ifdef STRATA_ASAN
  GTEST_SKIP() << "AddressSanitizer aborts on impossible malloc sizes";
#endif
  malloc_resource m;
  heap_resource h;
  EXPECT_THROW((void)m.allocate(SIZE_MAX / 2, 16), std::bad_alloc);
  EXPECT_THROW((void)h.allocate(SIZE_MAX / 2, 16), std::bad_alloc);
}

TEST(Resource, CheckedMultiplyDetectsOverflow) {
  EXPECT_EQ(strata::checked_multiply(1000, 64), 64000u);
  EXPECT_THROW((void)strata::checked_multiply(SIZE_MAX / 2, 3), std::bad_array_new_length);
}

TEST(Resource, FirstClassHeapResourceAllocatesFromItsHeap) {
  strata_heap_t* heap = strata_heap_new();
  ASSERT_NE(heap, nullptr);
  heap_resource on_heap(heap);
  EXPECT_FALSE(on_heap.is_equal(heap_resource{}));
  EXPECT_TRUE(on_heap.is_equal(heap_resource(heap)));
  void* p = on_heap.allocate(256, 64);
  EXPECT_GE(strata_usable_size(p), 256u);
  on_heap.deallocate(p, 256, 64);
  strata_heap_destroy(heap);
}

TEST(ResourceRef, ServesPmrContainers) {
  heap_resource h;
  resource_ref resource(h);
  std::pmr::map<int, std::pmr::string> map(&resource);
  for (int i = 0; i < 1000; ++i) map.emplace(i, std::string(50, static_cast<char>('a' + i % 26)));
  EXPECT_EQ(map.at(27)[0], 'b');
  EXPECT_EQ(resource.target<heap_resource>(), &h);
  EXPECT_EQ(resource.target<malloc_resource>(), nullptr);
}

TEST(ResourceRef, EqualityFollowsTheReferencedResources) {
  malloc_resource m1, m2;
  heap_resource h;
  resource_ref a(m1), b(m2), c(h), a2(m1);
  EXPECT_TRUE(a.is_equal(a2));
  EXPECT_TRUE(a.is_equal(b));  // two malloc_resources are interchangeable
  EXPECT_FALSE(a.is_equal(c));
  EXPECT_FALSE(a.is_equal(*std::pmr::new_delete_resource()));
}

TEST(ResourceRef, WrapsAnotherPmrResource) {
  std::pmr::monotonic_buffer_resource monotonic;
  resource_ref resource(static_cast<std::pmr::memory_resource&>(monotonic));
  std::pmr::vector<int> v(&resource);
  v.assign(100, 7);
  EXPECT_EQ(v[99], 7);
}

}  // namespace
