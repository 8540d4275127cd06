// Managed memory in the device layer: prefetch, advice, device memsets and
// host touches. The contract (contents survive every move) runs on each
// backend; residency and the cost model are the simulated device's and are
// checked there page by page.
#include "backends.hpp"
#include "byte_checks.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t page = 64 * kib;

template <class Backend>
class managed_contract : public device_test<Backend> {};
TYPED_TEST_SUITE(managed_contract, backends, backend_names);

TYPED_TEST(managed_contract, ContentsSurviveDeviceWritesPrefetchesAndHostTouches) {
  device& dev = *this->dev;
  const stream s = dev.create_stream();
  const std::size_t bytes = 3 * page + 100;
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(bytes));
  ASSERT_NE(p, nullptr);
  dev.memset_async(p, 0x5a, bytes, s);
  dev.prefetch_async(p, bytes, memory_location::host, s);
  dev.synchronize(s);
  dev.host_access(p, bytes);
  EXPECT_TRUE(holds(p, bytes, 0x5a));
  std::memset(p, 0x11, page);
  dev.prefetch_async(p, bytes, memory_location::device, s);
  dev.memset_async(p + page, 0x22, page, s);
  dev.synchronize(s);
  dev.host_access(p, bytes);
  EXPECT_TRUE(holds(p, page, 0x11));
  EXPECT_TRUE(holds(p + page, page, 0x22));
  EXPECT_TRUE(holds(p + 2 * page, page + 100, 0x5a));
  dev.advise(p, bytes, memory_advice::set_read_mostly, memory_location::device);
  dev.advise(p, bytes, memory_advice::unset_read_mostly, memory_location::device);
  dev.deallocate_managed(p);
  dev.destroy_stream(s);
}

TYPED_TEST(managed_contract, PrefetchOfMemoryThatIsNotManagedIsRefused) {
  device& dev = *this->dev;
  void* p = dev.allocate(4096);
  EXPECT_THROW(dev.prefetch_async(p, 4096, memory_location::host, stream{}), device_error);
  dev.deallocate(p);
}

TEST(managed_residency, PagesStartNowhereAndFollowTheirToucher) {
  simulated_device dev(with_migration_costs());
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(4 * page));
  EXPECT_EQ(dev.managed_residency(p), residency::none);
  dev.host_access(p, 4 * page);  // the host's first touch: an ordinary page fault
  EXPECT_EQ(dev.managed_residency(p + 3 * page), residency::host);
  EXPECT_EQ(dev.managed_stats().charged, std::chrono::nanoseconds{0});
  dev.memset_async(p + page, 1, 2 * page, stream{});  // pages 1 and 2 fault to the device
  dev.synchronize();
  EXPECT_EQ(dev.managed_residency(p), residency::host);
  EXPECT_EQ(dev.managed_residency(p + page), residency::device);
  EXPECT_EQ(dev.managed_residency(p + 2 * page + page - 1), residency::device);
  EXPECT_EQ(dev.managed_residency(p + 3 * page), residency::host);
  managed_statistics stats = dev.managed_stats();
  EXPECT_EQ(stats.faulted_to_device, 2u);
  EXPECT_EQ(stats.charged, std::chrono::microseconds(20));
  dev.host_access(p + page, 1);  // one page back
  stats = dev.managed_stats();
  EXPECT_EQ(stats.faulted_to_host, 1u);
  EXPECT_EQ(dev.managed_residency(p + page), residency::host);
  EXPECT_EQ(dev.managed_residency(p + 2 * page), residency::device);
  dev.deallocate_managed(p);
}

TEST(managed_residency, PrefetchMovesAheadOnItsStreamAtThePrefetchCost) {
  simulated_device dev(with_migration_costs());
  const stream s = dev.create_stream();
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(8 * page));
  dev.host_access(p, 8 * page);
  dev.prefetch_async(p, 8 * page, memory_location::device, s);
  dev.memset_async(p, 7, 8 * page, s);  // after the prefetch: no faults
  dev.synchronize(s);
  managed_statistics stats = dev.managed_stats();
  EXPECT_EQ(stats.prefetched_to_device, 8u);
  EXPECT_EQ(stats.faulted_to_device, 0u);
  EXPECT_EQ(stats.charged, std::chrono::microseconds(8));
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_EQ(dev.managed_residency(p + i * page), residency::device);
  dev.prefetch_async(p, 8 * page, memory_location::device, s);  // already there: free
  dev.prefetch_async(p, 2 * page, memory_location::host, s);
  dev.synchronize(s);
  stats = dev.managed_stats();
  EXPECT_EQ(stats.prefetched_to_device, 8u);
  EXPECT_EQ(stats.prefetched_to_host, 2u);
  EXPECT_EQ(dev.managed_residency(p + page), residency::host);
  EXPECT_EQ(dev.managed_residency(p + 2 * page), residency::device);
  dev.host_access(p, 8 * page);
  EXPECT_TRUE(holds(p, 8 * page, 7));
  dev.deallocate_managed(p);
  dev.destroy_stream(s);
}

TEST(managed_residency, ReadMostlyPagesKeepACopyOnEachReaderUntilAWrite) {
  simulated_device dev(with_migration_costs());
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(page));
  auto* scratch = static_cast<std::uint8_t*>(dev.allocate(page));
  dev.host_access(p, page);
  std::memset(p, 3, page);
  dev.advise(p, page, memory_advice::set_read_mostly, memory_location::device);
  dev.copy_async(scratch, p, page, copy_kind::device_to_device, stream{});  // a device read
  dev.synchronize();
  EXPECT_EQ(dev.managed_residency(p), residency::both);
  dev.host_access(p, page);  // the host copy is still there: no fault
  EXPECT_EQ(dev.managed_stats().faulted_to_host, 0u);
  EXPECT_EQ(dev.managed_residency(p), residency::host);  // the host may write: one copy
  dev.deallocate(scratch);
  dev.deallocate_managed(p);
}

TEST(managed_residency, PagesPreferringTheHostAreReachedRemotelyByTheDevice) {
  simulated_device dev(with_migration_costs());
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(2 * page));
  dev.advise(p, page, memory_advice::set_preferred_location, memory_location::host);
  dev.host_access(p, 2 * page);
  dev.memset_async(p, 1, 2 * page, stream{});
  dev.synchronize();
  EXPECT_EQ(dev.managed_residency(p), residency::host);  // mapped, not moved
  EXPECT_EQ(dev.managed_residency(p + page), residency::device);
  const managed_statistics stats = dev.managed_stats();
  EXPECT_EQ(stats.remote_accesses, 1u);
  EXPECT_EQ(stats.faulted_to_device, 1u);
  dev.advise(p, 2 * page, memory_advice::set_accessed_by, memory_location::host);
  dev.host_access(p, 2 * page);  // the device-resident page is read in place
  EXPECT_EQ(dev.managed_residency(p + page), residency::device);
  EXPECT_EQ(dev.managed_stats().faulted_to_host, 0u);
  dev.deallocate_managed(p);
}

TEST(managed_residency, BadPointersAreRefused) {
  simulated_device dev;
  auto* p = static_cast<std::uint8_t*>(dev.allocate_managed(page));
  int local = 0;
  EXPECT_THROW(dev.prefetch_async(&local, 4, memory_location::device, stream{}), device_error);
  EXPECT_THROW(dev.prefetch_async(p, 2 * page, memory_location::device, stream{}), device_error);
  EXPECT_THROW(dev.advise(&local, 4, memory_advice::set_read_mostly, memory_location::device),
               device_error);
  EXPECT_THROW(dev.deallocate_managed(p + 16), device_error);
  EXPECT_THROW(dev.memset_async(nullptr, 0, 4, stream{}), device_error);
  dev.host_access(&local, sizeof local);  // host memory: nothing to move
  EXPECT_EQ(dev.managed_residency(&local), residency::none);
  dev.deallocate_managed(p);
}

}  // namespace
}  // namespace strata::gpu::testing
