// The GPU layer in the memory ledger: its pools and caching allocator join it
// with their device, the device's own view is there, and what strata holds on
// the device plus what is used outside it is what the device reports in use.
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/managed_pool.hpp>
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/ledger.hpp>

#include <gtest/gtest.h>

namespace strata::gpu {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

// An address-only device of 1 GiB: nothing is touched.
simulated_config small_device() {
  simulated_config c;
  c.capacity = 1024 * mib;
  c.backing = memory_backing::address_only;
  return c;
}

// The row whose tag is `tag`; the test fails when there is none.
const ledger_row& row_tagged(const memory_ledger& ledger, const std::string& tag) {
  for (const ledger_row& row : ledger.rows())
    if (row.tag == tag) return row;
  ADD_FAILURE() << "no row tagged " << tag;
  return ledger.rows().front();
}

TEST(GpuLedger, PoolsAndTheCachingAllocatorJoinWithTheirDevice) {
  simulated_device dev(small_device());
  const std::size_t before = memory_ledger::live_entries();
  {
    device_pool pool(dev);
    pool.ledger().set_tag("pool");
    managed_pool managed(dev);
    managed.ledger().set_tag("managed");
    pinned_pool pinned(dev);
    pinned.ledger().set_tag("pinned");
    caching_allocator cache(dev);
    cache.ledger().set_tag("cache");
    EXPECT_EQ(memory_ledger::live_entries(), before + 4);

    void* a = pool.allocate(3 * mib);
    void* b = cache.allocate(5 * mib);
    void* c = pinned.allocate(10000);
    void* d = managed.allocate(mib);
    memory_ledger ledger = memory_ledger::take();
    const ledger_row& pool_row = row_tagged(ledger, "pool");
    EXPECT_EQ(pool_row.kind, "device_pool");
    EXPECT_EQ(pool_row.domain, ledger_domain::device);
    EXPECT_EQ(pool_row.figures.held, pool.statistics().blocks.bytes_reserved);
    EXPECT_EQ(pool_row.figures.in_use, pool.statistics().blocks.bytes_in_use);
    const ledger_row& cache_row = row_tagged(ledger, "cache");
    EXPECT_EQ(cache_row.kind, "caching_allocator");
    EXPECT_EQ(cache_row.figures.held,
              static_cast<std::size_t>(cache.stats().all.reserved_bytes.current));
    EXPECT_GE(cache_row.figures.in_use, 5 * mib);
    EXPECT_EQ(row_tagged(ledger, "managed").kind, "managed_pool");
    EXPECT_EQ(row_tagged(ledger, "managed").domain, ledger_domain::managed);
    EXPECT_EQ(row_tagged(ledger, "pinned").domain, ledger_domain::pinned);
    EXPECT_EQ(row_tagged(ledger, "pinned").figures.in_use, 16384u);
    EXPECT_EQ(cache_row.device, dev.ordinal());

    // One device row: strata's device roots plus what is used outside strata
    // make what the device reports in use.
    ASSERT_EQ(ledger.devices().size(), 1u);
    const ledger_device_row& device_row = ledger.devices().front();
    EXPECT_EQ(device_row.memory.total, 1024 * mib);
    EXPECT_EQ(device_row.strata_held, pool_row.figures.held + cache_row.figures.held);
    EXPECT_EQ(device_row.strata_held, ledger.total_held(ledger_domain::device));
    EXPECT_EQ(device_row.strata_held + device_row.outside,
              device_row.memory.total - device_row.memory.free);

    // Memory taken from the device behind strata's back is used outside it.
    void* raw = dev.allocate(64 * mib);
    const ledger_device_row after = memory_ledger::take().devices().front();
    EXPECT_EQ(after.outside, device_row.outside + 64 * mib);
    dev.deallocate(raw);

    pool.deallocate(a, 3 * mib);
    cache.deallocate(b);
    pinned.deallocate(c, 10000);
    managed.deallocate(d, mib);
  }
  EXPECT_EQ(memory_ledger::live_entries(), before);
}

TEST(GpuLedger, JsonNamesTheDevice) {
  simulated_device dev(small_device());
  caching_allocator cache(dev);
  void* p = cache.allocate(mib);
  std::string json = memory_ledger::take().json();
  EXPECT_NE(json.find("\"backend\": \"" + std::string(dev.backend_name()) + "\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"outside_strata\": "), std::string::npos);
  cache.deallocate(p);
}

}  // namespace
}  // namespace strata::gpu
