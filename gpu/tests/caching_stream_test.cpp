// The caching allocator's stream rules: a block is reused at once on the
// stream it was freed on, on another stream only after that stream waits on
// the first, and after record_stream only once the other streams' work ran.
#include "caching_fixture.hpp"
#include "gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace strata::gpu::testing {
namespace {

using caching_stream = caching_test;

// Give stream workers the chance to run ahead if nothing stops them.
void let_workers_run() {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

TEST_F(caching_stream, SameStreamReusesAtOnce) {
  void* a = cache->allocate(64 * kib, streams[0]);
  cache->deallocate(a, 64 * kib, streams[0]);
  EXPECT_EQ(cache->allocate(64 * kib, streams[0]), a);
  EXPECT_EQ(cache->stats().cache_hits, 1u);
  EXPECT_EQ(cache->stats().cross_stream_reuses, 0u);
}

// Stream A's queued work still writes the block when A frees it; stream B
// asks at once. Whichever block B gets, its work must not overlap A's.
TEST_F(caching_stream, BlockFreedUnderPendingWorkWaitsForIt) {
  const std::size_t bytes = 64 * kib;
  const stream a = streams[0];
  const stream b = streams[1];
  gate held;
  std::atomic<bool> a_done{false};
  std::atomic<bool> a_intact{false};
  void* first = cache->allocate(bytes, a);
  sim->launch_host(a, held.closed());
  sim->launch_host(a, [&, first] {
    fill(first, bytes, 1);
    let_workers_run();
    a_intact = holds(first, bytes, 1);
    a_done = true;
  });
  cache->deallocate(first, bytes, a);

  void* second = cache->allocate(bytes, b);
  std::atomic<bool> b_after_a{false};
  sim->launch_host(b, [&, second] {
    b_after_a = a_done.load();
    fill(second, bytes, 2);
  });
  let_workers_run();
  held.open();
  sim->synchronize();

  EXPECT_TRUE(a_intact);
  EXPECT_TRUE(holds(second, bytes, 2));
  if (second == first) {
    EXPECT_TRUE(b_after_a);
    EXPECT_EQ(cache->stats().cross_stream_reuses, 1u);
  }
}

TEST_F(caching_stream, CrossStreamReuseAfterWait) {
  constexpr std::size_t bytes = 256 * kib;
  void* p = cache->allocate(bytes, streams[0]);
  sim->launch_host(streams[0], [p] { fill(p, bytes, 7); });
  cache->deallocate(p, bytes, streams[0]);
  // The only free memory is cached with stream 0: stream 2 borrows it rather
  // than taking a new segment, and sees stream 0's writes when its work runs.
  void* q = cache->allocate(bytes, streams[2]);
  EXPECT_EQ(q, p);
  std::atomic<bool> saw{false};
  sim->launch_host(streams[2], [&, q] { saw = holds(q, bytes, 7); });
  sim->synchronize();
  EXPECT_TRUE(saw);
  const caching_stats stats = cache->stats();
  EXPECT_EQ(stats.cross_stream_reuses, 1u);
  EXPECT_EQ(stats.num_device_allocs, 1u);
  // The block is cached with stream 2 from now on.
  cache->deallocate(q, bytes, streams[2]);
  EXPECT_EQ(cache->allocate(bytes, streams[2]), p);
  EXPECT_EQ(cache->stats().cross_stream_reuses, 1u);
  expect_consistent();
}

TEST_F(caching_stream, RecordStreamHoldsTheBlockUntilThatWorkRuns) {
  const std::size_t bytes = 128 * kib;
  const stream a = streams[0];
  const stream b = streams[1];
  gate held;
  std::atomic<bool> b_intact{false};
  void* p = cache->allocate(bytes, a);
  sim->launch_host(b, held.closed());
  sim->launch_host(b, [&, p] {
    fill(p, bytes, 3);
    let_workers_run();
    b_intact = holds(p, bytes, 3);
  });
  cache->record_stream(p, b);
  cache->deallocate(p, bytes, a);

  memory_snapshot shot = cache->snapshot();
  ASSERT_EQ(shot.segments.size(), 1u);
  EXPECT_EQ(shot.segments[0].blocks[0].state, block_state::active_pending_free);
  expect_consistent();

  // Neither stream A nor any other gets the block while B's work is queued.
  void* on_a = cache->allocate(bytes, a);
  void* on_c = cache->allocate(bytes, streams[2]);
  EXPECT_NE(on_a, p);
  EXPECT_NE(on_c, p);
  sim->launch_host(a, [=] { fill(on_a, bytes, 4); });
  sim->launch_host(streams[2], [=] { fill(on_c, bytes, 5); });
  let_workers_run();
  held.open();
  sim->synchronize();
  EXPECT_TRUE(b_intact);

  // Once B's work has run, the block is back in A's cache.
  EXPECT_EQ(cache->allocate(bytes, a), p);
  expect_consistent();
}

TEST_F(caching_stream, FreeOnAnotherStreamWaitsForTheAllocatingStream) {
  const std::size_t bytes = 32 * kib;
  const stream a = streams[0];
  const stream b = streams[1];
  gate held;
  std::atomic<bool> a_intact{false};
  void* p = cache->allocate(bytes, a);
  sim->launch_host(a, held.closed());
  sim->launch_host(a, [&, p] {
    fill(p, bytes, 6);
    let_workers_run();
    a_intact = holds(p, bytes, 6);
  });
  cache->deallocate(p, bytes, b);
  void* q = cache->allocate(bytes, b);
  EXPECT_NE(q, p);
  sim->launch_host(b, [=] { fill(q, bytes, 8); });
  let_workers_run();
  held.open();
  sim->synchronize();
  EXPECT_TRUE(a_intact);
  // Once stream A's work has run, the block is cached with B.
  EXPECT_EQ(cache->allocate(bytes, b), p);
  expect_consistent();
}

TEST_F(caching_stream, FreeOnTheAllocatingStreamByDefault) {
  void* p = cache->allocate(4 * kib, streams[3]);
  cache->deallocate(p);
  EXPECT_EQ(cache->allocate(4 * kib, streams[3]), p);
  EXPECT_EQ(cache->stats().cross_stream_reuses, 0u);
}

TEST_F(caching_stream, SynchronousFormsServeAnyStream) {
  void* p = cache->allocate_sync(8 * kib);
  ASSERT_NE(p, nullptr);
  sim->launch_host(streams[1], [p] { fill(p, 8 * kib, 9); });
  sim->synchronize();
  EXPECT_TRUE(holds(p, 8 * kib, 9));
  cache->deallocate_sync(p, 8 * kib);
  expect_consistent();
}

TEST_F(caching_stream, ForeignPointersAreRejected) {
  int local = 0;
  EXPECT_THROW(cache->deallocate(&local, sizeof local, streams[0]), device_error);
  EXPECT_THROW(cache->record_stream(&local, streams[1]), device_error);
  EXPECT_EQ(cache->allocate(0, streams[0]), nullptr);
  cache->deallocate(nullptr, 0, streams[0]);
}

}  // namespace
}  // namespace strata::gpu::testing
