// The GPU tracking adaptor on the simulated device: its leak report lists the
// live device blocks, the stream-ordered calls reach the upstream in stream
// order, and its transfer totals per direction add up to the bytes copied.
#include "backends.hpp"
#include "gate.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/tracking.hpp>

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

static_assert(device_memory_resource<tracking<device_resource>>);
static_assert(device_memory_resource<tracking<device_pool>>);
static_assert(device_memory_resource<tracking<caching_allocator>>);
static_assert(tracking<device_pool>::access == memory_access::device);

// How `p` appears in a leak report.
std::string report_address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR " ", reinterpret_cast<std::uintptr_t>(p));
  return text;
}

TEST(gpu_tracking, LeakReportListsTheLiveDeviceBlocks) {
  simulated_device dev;
  tracking<device_pool> pool(dev);
  const stream s = dev.create_stream();
  void* kept = pool.allocate(4 * kib, s);
  void* freed = pool.allocate(8 * kib, s);
  void* tagged;
  {
    tracking_tag tag("activations");
    tagged = pool.allocate(16 * kib, s);
  }
  pool.deallocate(freed, 8 * kib, s);
  EXPECT_EQ(pool.live_blocks(), 2u);
  EXPECT_EQ(pool.live_bytes(), 20 * kib);
  const std::string report = pool.leak_report();
  EXPECT_NE(report.find("2 live blocks, 20480 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find(report_address(kept) + "4096 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find(report_address(tagged) + "16384 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find("tag activations"), std::string::npos) << report;
  EXPECT_EQ(report.find(report_address(freed)), std::string::npos) << report;
  EXPECT_TRUE(pool.upstream().owns(kept));
  pool.deallocate(kept, 4 * kib, s);
  pool.deallocate(tagged, 16 * kib, s);
  EXPECT_EQ(pool.live_blocks(), 0u);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking, StreamOrderReachesTheUpstream) {
  simulated_device dev;
  tracking<device_pool> pool(dev);
  const stream s = dev.create_stream();
  gate held;
  dev.launch_host(s, held.closed());
  void* first = pool.allocate(4 * kib, s);
  // A free in the order of s waits in the pool behind s's queued work (a
  // synchronous one would go straight back), and s itself may reuse it at once.
  pool.deallocate(first, 4 * kib, s);
  EXPECT_EQ(pool.upstream().statistics().pending_blocks, 1u);
  EXPECT_EQ(pool.allocate(4 * kib, s), first);
  EXPECT_EQ(pool.upstream().statistics().same_stream_reuses, 1u);
  EXPECT_EQ(pool.live_blocks(), 1u);
  held.open();
  pool.deallocate(first, 4 * kib, s);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking, SynchronousFormsAreRecordedToo) {
  simulated_device dev;
  tracking<caching_allocator> cache(dev);
  void* p = cache.allocate_sync(64 * kib);
  ASSERT_EQ(cache.records().live().size(), 1u);
  EXPECT_EQ(cache.records().live().front().address, reinterpret_cast<std::uintptr_t>(p));
  EXPECT_EQ(cache.upstream().stats().all.allocation.current, 1);
  cache.deallocate_sync(p, 64 * kib);
  EXPECT_EQ(cache.live_blocks(), 0u);
  EXPECT_EQ(cache.upstream().stats().all.allocation.current, 0);
}

TEST(gpu_tracking, TransferTotalsAddUpPerDirection) {
  simulated_device dev;
  tracking<device_resource> direct(dev);
  const stream s = dev.create_stream();
  pinned_buffer host(dev, 256 * kib);
  host.fill(9);
  void* first = direct.allocate(256 * kib, s);
  void* second = direct.allocate(256 * kib, s);
  direct.copy(first, host.data(), 256 * kib, copy_kind::host_to_device, s);
  direct.copy(first, host.data(), 64 * kib, copy_kind::host_to_device, s);
  direct.copy(second, first, 256 * kib, copy_kind::device_to_device, s);
  dev.synchronize(s);
  std::memset(host.data(), 0, host.size());  // so only the copy back can restore the pattern
  direct.copy(host.data(), second, 256 * kib, copy_kind::device_to_host, s);
  dev.synchronize(s);
  EXPECT_TRUE(host.holds(9));
  const transfer_totals h2d = direct.transfers(copy_kind::host_to_device);
  const transfer_totals d2d = direct.transfers(copy_kind::device_to_device);
  const transfer_totals d2h = direct.transfers(copy_kind::device_to_host);
  EXPECT_EQ(h2d.bytes, 320 * kib);
  EXPECT_EQ(h2d.copies, 2u);
  EXPECT_EQ(d2d.bytes, 256 * kib);
  EXPECT_EQ(d2h.bytes, 256 * kib);
  EXPECT_EQ(h2d.bytes + d2d.bytes + d2h.bytes, 832 * kib);
  EXPECT_EQ(direct.transfers_submitted(copy_kind::device_to_host), 256 * kib);
  EXPECT_GT(h2d.bandwidth(), 0.0);
  EXPECT_GT(d2d.bandwidth(), 0.0);
  EXPECT_GT(d2h.bandwidth(), 0.0);
  EXPECT_EQ(direct.live_blocks(), 2u);
  direct.deallocate(first, 256 * kib, s);
  direct.deallocate(second, 256 * kib, s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking, OffSwitchPassesStraightThrough) {
  simulated_device dev;
  tracking<device_pool, false> pool(dev);
  const stream s = dev.create_stream();
  void* p = pool.allocate(4 * kib, s);
  EXPECT_TRUE(pool.upstream().owns(p));
  EXPECT_EQ(pool.live_blocks(), 0u);
  EXPECT_EQ(pool.leak_report(), "strata tracking: compiled out\n");
  pool.deallocate(p, 4 * kib, s);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
