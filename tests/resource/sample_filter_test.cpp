// The sampled tracking adaptor's filter: a marked address always reads as a
// possible sample, a slot shared by several samples stays held until the last
// of them is gone, and a summary bit stays set while any slot under it holds one.
#include <strata/detail/sample_filter.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace {

const void* address(std::uintptr_t n) {
  return reinterpret_cast<const void*>(n * 16);
}

TEST(SampleFilter, EmptyHoldsNothing) {
  const auto filter = std::make_unique<strata::detail::sample_filter>();
  for (std::uintptr_t n = 1; n < 100'000; ++n) ASSERT_FALSE(filter->may_hold(address(n)));
}

TEST(SampleFilter, MarkedAddressesAreHeldUntilRemoved) {
  const auto filter = std::make_unique<strata::detail::sample_filter>();
  std::vector<const void*> marked;
  for (std::uintptr_t n = 1; n <= 300; ++n) marked.push_back(address(n * 977));
  for (const void* p : marked) filter->add(p);
  for (const void* p : marked) EXPECT_TRUE(filter->may_hold(p));
  // 300 marks among 4096 slots: most other addresses still read as not held.
  int false_hits = 0;
  for (std::uintptr_t n = 1; n <= 10'000; ++n) false_hits += filter->may_hold(address(n * 977 + 1));
  EXPECT_LT(false_hits, 1'500);
  for (const void* p : marked) filter->remove(p);
  for (std::uintptr_t n = 1; n < 400'000; ++n) ASSERT_FALSE(filter->may_hold(address(n)));
}

// Two samples whose addresses share a slot: removing one leaves the other held.
TEST(SampleFilter, SharedSlotStaysHeldUntilTheLastSampleGoes) {
  const auto filter = std::make_unique<strata::detail::sample_filter>();
  const void* first = address(1);
  filter->add(first);
  const void* second = nullptr;
  for (std::uintptr_t n = 2; second == nullptr; ++n)
    if (filter->may_hold(address(n))) second = address(n);
  filter->add(second);
  filter->remove(first);
  EXPECT_TRUE(filter->may_hold(second));
  filter->add(first);
  filter->remove(second);
  EXPECT_TRUE(filter->may_hold(first));
  filter->remove(first);
  EXPECT_FALSE(filter->may_hold(first));
  EXPECT_FALSE(filter->may_hold(second));
}

// The filter's slot of an address (its Fibonacci hash's top 12 bits), to pick
// addresses under one summary bit.
std::uint64_t slot_of(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) * 0x9e3779b97f4a7c15ull) >> 52;
}

// Two samples in different slots under one summary bit (eight slots each):
// removing one keeps the other held and its own slot clear.
TEST(SampleFilter, SummaryBitStaysSetWhileAnySlotUnderItHoldsASample) {
  const auto filter = std::make_unique<strata::detail::sample_filter>();
  const void* first = address(1);
  const void* second = nullptr;
  for (std::uintptr_t n = 2; second == nullptr; ++n)
    if (slot_of(address(n)) / 8 == slot_of(first) / 8 && slot_of(address(n)) != slot_of(first))
      second = address(n);
  filter->add(first);
  EXPECT_FALSE(filter->may_hold(second));
  filter->add(second);
  filter->remove(first);
  EXPECT_FALSE(filter->may_hold(first));
  EXPECT_TRUE(filter->may_hold(second));
  filter->remove(second);
  EXPECT_FALSE(filter->may_hold(second));
  filter->add(first);
  EXPECT_TRUE(filter->may_hold(first));
}

}  // namespace
