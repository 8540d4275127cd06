// strata::allocator in every standard container, its propagation on copy, move
// and swap, and the round trips between strata resources and std::pmr.
#include <strata/allocator.hpp>
#include <strata/statistics.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using counted = strata::statistics<strata::heap_resource>;
template <class T>
using alloc = strata::allocator<T, counted>;

static_assert(strata::host_resource<strata::pmr_upstream>);
static_assert(
    std::is_same_v<std::allocator_traits<alloc<int>>::rebind_alloc<double>, alloc<double>>);
static_assert(std::allocator_traits<alloc<int>>::propagate_on_container_swap::value);

TEST(Allocator, WorksInEveryStandardContainer) {
  counted resource;
  {
    std::vector<int, alloc<int>> v(alloc<int>{resource});
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    std::list<int, alloc<int>> l(v.begin(), v.end(), alloc<int>{resource});
    std::deque<int, alloc<int>> d(v.begin(), v.end(), alloc<int>{resource});
    std::map<int, int, std::less<>, alloc<std::pair<const int, int>>> m{
        alloc<std::pair<const int, int>>{resource}};
    std::unordered_map<int, int, std::hash<int>, std::equal_to<>, alloc<std::pair<const int, int>>>
        u{alloc<std::pair<const int, int>>{resource}};
    for (int i = 0; i < 100; ++i) m[i] = u[i] = i;
    std::basic_string<char, std::char_traits<char>, alloc<char>> s(
        "a string long enough to leave the small buffer", alloc<char>{resource});
    s += s;
    auto shared = std::allocate_shared<std::vector<int>>(alloc<int>{resource}, 100, 7);
    EXPECT_EQ(l.size() + d.size() + m.size() + u.size() + shared->size(), 2300u);
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 499500);
    EXPECT_GE(resource.snapshot().allocations, 1000u / 1u);  // list nodes alone
  }
  EXPECT_EQ(resource.bytes_in_use(), 0u);
}

TEST(Allocator, CopyKeepsTheResource) {
  counted a;
  std::vector<int, alloc<int>> v({1, 2, 3}, alloc<int>{a});
  const auto copy = v;
  EXPECT_EQ(&copy.get_allocator().resource(), &a);
  std::basic_string<char, std::char_traits<char>, alloc<char>> s(100, 'x', alloc<char>{a});
  const auto s2 = s;
  EXPECT_EQ(&s2.get_allocator().resource(), &a);
}

TEST(Allocator, AssignmentAndSwapPropagate) {
  counted a, b;
  std::vector<int, alloc<int>> va({1, 2, 3}, alloc<int>{a});
  std::vector<int, alloc<int>> vb({4, 5}, alloc<int>{b});
  vb = va;  // copy assignment: vb now uses a
  EXPECT_EQ(&vb.get_allocator().resource(), &a);
  std::vector<int, alloc<int>> vc({6}, alloc<int>{b});
  const int* data = vc.data();
  va = std::move(vc);  // move assignment: the buffer moves, no element copies
  EXPECT_EQ(&va.get_allocator().resource(), &b);
  EXPECT_EQ(va.data(), data);
  std::vector<int, alloc<int>> vd({7}, alloc<int>{a});
  va.swap(vd);
  EXPECT_EQ(&va.get_allocator().resource(), &a);
  EXPECT_EQ(&vd.get_allocator().resource(), &b);
  EXPECT_EQ(vd.front(), 6);
}

TEST(Allocator, EqualityIsTheSameResource) {
  counted a, b;
  EXPECT_TRUE(alloc<int>{a} == alloc<double>{a});
  EXPECT_FALSE(alloc<int>{a} == alloc<int>{b});
  EXPECT_TRUE(strata::allocator<int>{} == strata::allocator<char>{});
}

TEST(Allocator, OverflowAndZero) {
  strata::allocator<std::uint64_t> a;
  EXPECT_THROW((void)a.allocate(SIZE_MAX / 4), std::bad_array_new_length);
  std::uint64_t* p = a.allocate(0);
  a.deallocate(p, 0);
}

TEST(Pmr, StrataResourceServesPmrContainers) {
  counted resource;
  strata::resource_ref ref(resource);
  {
    std::pmr::vector<std::pmr::string> v(&ref);
    v.emplace_back("a pmr string long enough to leave the small buffer");
    EXPECT_EQ(v.front().get_allocator().resource(), &ref);
  }
  EXPECT_GT(resource.snapshot().allocations, 0u);
  EXPECT_EQ(resource.bytes_in_use(), 0u);
}

TEST(Pmr, PmrResourceIsAStrataUpstream) {
  std::pmr::unsynchronized_pool_resource pool;
  strata::statistics<strata::pmr_upstream> stats(strata::pmr_upstream{pool});
  std::vector<int, strata::allocator<int, decltype(stats)>> v(
      strata::allocator<int, decltype(stats)>{stats});
  for (int i = 0; i < 100; ++i) v.push_back(i);
  EXPECT_GT(stats.bytes_in_use(), 0u);
  EXPECT_THROW(stats.allocate(8, 5), std::invalid_argument);
  strata::pmr_upstream a{pool}, b{pool};
  EXPECT_TRUE(a.is_equal(b));
}

TEST(Pmr, RoundTripThroughBothBridges) {
  counted inner;
  strata::resource_ref as_pmr(inner);
  strata::pmr_upstream back(as_pmr);
  void* p = back.allocate(64, 32);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 32, 0u);
  EXPECT_EQ(inner.bytes_in_use(), 64u);
  back.deallocate(p, 64, 32);
  EXPECT_EQ(inner.bytes_in_use(), 0u);
}

}  // namespace
