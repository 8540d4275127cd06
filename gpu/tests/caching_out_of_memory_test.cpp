// The out-of-memory report's free blocks, stranded segments and the
// configuration a replay of the trace ring finds, and the OOM observers.
#include "caching_fixture.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace strata::gpu::testing {
namespace {

using caching_oom = caching_test;

// A 100 MiB block, freed, then split by a 30 MiB request; 80 MiB more does
// not fit the 128 MiB device. With max_split_size_mb:64 the 30 MiB request
// would have left the large block whole and free, so it would have gone back.
void strand(caching_allocator& cache, stream s) {
  cache.deallocate(cache.allocate(100 * mib, s), 100 * mib, s);
  cache.allocate(30 * mib, s);
}

TEST_F(caching_oom, ReportListsFreeBlocksStrandedSegmentsAndTheAvoidingChange) {
  capacity = 128 * mib;
  make();
  strand(*cache, streams[0]);
  try {
    cache->allocate(80 * mib, streams[0]);
    FAIL() << "expected out of memory";
  } catch (const out_of_memory_error& error) {
    const out_of_memory_report& report = error.report();
    ASSERT_EQ(report.largest_free_blocks.size(), 1u);
    EXPECT_EQ(report.largest_free_blocks[0].size, 70 * mib);
    EXPECT_EQ(report.largest_free_blocks[0].on, streams[0]);
    ASSERT_EQ(report.stranded.size(), 1u);
    EXPECT_EQ(report.stranded[0].size, 100 * mib);
    EXPECT_EQ(report.stranded[0].stranded, 70 * mib);
    // Of the changes that serve it, one growing segment reserves the least.
    EXPECT_EQ(report.avoided_by, "expandable_segments:True");
    EXPECT_EQ(report.replayed_actions, 4u);  // alloc, free, alloc, the failed one
    const std::string message = error.what();
    EXPECT_NE(message.find("strands 70.00 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("with expandable_segments:True"), std::string::npos) << message;
  }
  expect_consistent();
}

TEST_F(caching_oom, BlocksFromBeforeTheRingAreReplayedFirst) {
  capacity = 128 * mib;
  caching_config config;
  config.trace_capacity = 3;  // the 100 MiB allocation falls out of the ring
  make(config);
  strand(*cache, streams[0]);
  try {
    cache->allocate(80 * mib, streams[0]);
    FAIL() << "expected out of memory";
  } catch (const out_of_memory_error& error) {
    // The ring holds free_completed, the 30 MiB alloc and the oom: without
    // the 100 MiB block it split, the current configuration serves 80 MiB
    // too, so the replay has no advice to give.
    EXPECT_EQ(error.report().replayed_actions, 2u);
    EXPECT_EQ(error.report().avoided_by, "");
  }
}

TEST_F(caching_oom, NoRingNoReplay) {
  capacity = 128 * mib;
  caching_config config;
  config.trace_capacity = 0;
  make(config);
  strand(*cache, streams[0]);
  try {
    cache->allocate(80 * mib, streams[0]);
    FAIL() << "expected out of memory";
  } catch (const out_of_memory_error& error) {
    EXPECT_EQ(error.report().avoided_by, "");
    EXPECT_EQ(error.report().replayed_actions, 0u);
    EXPECT_NE(std::string(error.what()).find("set max_split_size_mb"), std::string::npos);
  }
}

TEST_F(caching_oom, ObserversSeeTheReportOnTheAllocatingThreadBeforeTheThrow) {
  capacity = 128 * mib;
  make();
  strand(*cache, streams[0]);
  int calls = 0;
  std::size_t seen_requested = 0;
  std::size_t reserved_seen = 0;
  std::thread::id thread;
  const std::uint64_t id = cache->add_oom_observer([&](const out_of_memory_report& report) {
    ++calls;
    seen_requested = report.requested;
    thread = std::this_thread::get_id();
    // The lock is released: the observer may ask the allocator.
    reserved_seen = static_cast<std::size_t>(cache->stats().all.reserved_bytes.current);
  });
  const std::uint64_t second = cache->add_oom_observer([&](const out_of_memory_report&) {
    EXPECT_EQ(calls, 1);  // in the order they were added
    ++calls;
  });
  EXPECT_THROW(cache->allocate(80 * mib, streams[0]), out_of_memory_error);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen_requested, 80 * mib);
  EXPECT_EQ(thread, std::this_thread::get_id());
  EXPECT_EQ(reserved_seen, 100 * mib);
  EXPECT_TRUE(cache->remove_oom_observer(id));
  EXPECT_FALSE(cache->remove_oom_observer(id));
  EXPECT_TRUE(cache->remove_oom_observer(second));
  EXPECT_THROW(cache->allocate(80 * mib, streams[0]), out_of_memory_error);
  EXPECT_EQ(calls, 2);
  EXPECT_THROW(cache->add_oom_observer(nullptr), device_error);
}

TEST_F(caching_oom, AnObserverMayThrowItsOwn) {
  capacity = 4 * mib;
  make();
  cache->add_oom_observer([](const out_of_memory_report&) { throw std::runtime_error("mine"); });
  EXPECT_THROW(cache->allocate(8 * mib, streams[0]), std::runtime_error);
  expect_consistent();
}

}  // namespace
}  // namespace strata::gpu::testing
