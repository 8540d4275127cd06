// The caching allocator under CUDA's rules, as the strict simulator keeps
// them: streams told apart by what they are (per-thread streams, recycled
// handles, destroyed streams), segments given back only after the work that
// used them, and graph capture served from graph pools with no device
// allocation and no event query while a capture is under way.
#include "device_errors.hpp"

#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

// Write the pattern `seed` names into `bytes` of (host-backed) device memory.
void fill(void* p, std::size_t bytes, unsigned seed) {
  std::memset(p, static_cast<int>(seed), bytes);
}

// Whether `bytes` of device memory hold the pattern `seed` names.
bool holds(const void* p, std::size_t bytes, unsigned seed) {
  const auto* data = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (data[i] != static_cast<unsigned char>(seed)) return false;
  return true;
}

// A kernel that writes `seed` into the block, keeps it for a while, and checks
// nothing else wrote it meanwhile.
void slow_writer(simulated_device& dev, stream s, void* p, std::size_t bytes, unsigned seed,
                 std::atomic<bool>& intact) {
  dev.launch_kernel(s, [p, bytes, seed, &intact] {
    fill(p, bytes, seed);
    std::this_thread::sleep_for(40ms);
    intact = holds(p, bytes, seed);
  });
}

class caching_cuda_rules : public ::testing::Test {
 protected:
  caching_cuda_rules() : dev(recording()) {}

  // Violations recorded, not fatal, so a test can say what went wrong.
  static simulated_config recording() {
    simulated_config config;
    config.capacity = 256 * mib;
    config.on_violation = violation_policy::record;
    return config;
  }

  void make(caching_config config) { cache = std::make_unique<caching_allocator>(dev, config); }

  void TearDown() override {
    cache.reset();
    EXPECT_TRUE(dev.system().violations().empty()) << dev.system().violations().front();
  }

  simulated_device dev;
  std::unique_ptr<caching_allocator> cache = std::make_unique<caching_allocator>(dev);
};

// CuPy's per-thread mode passes cudaStreamPerThread from every thread: one
// handle, a different stream on each thread.
TEST_F(caching_cuda_rules, PerThreadStreamsOfTwoThreadsAreTwoStreams) {
  constexpr std::size_t bytes = 64 * kib;
  std::atomic<bool> first_intact{false};
  void* first = nullptr;
  std::thread([&] {
    first = cache->allocate(bytes, stream::per_thread());
    slow_writer(dev, stream::per_thread(), first, bytes, 1, first_intact);
    cache->deallocate(first, bytes, stream::per_thread());
  }).join();
  std::thread([&] {
    void* second = cache->allocate(bytes, stream::per_thread());
    dev.launch_kernel(stream::per_thread(), [second, bytes] { fill(second, bytes, 2); });
    dev.synchronize(stream::per_thread());
    EXPECT_TRUE(holds(second, bytes, 2));
  }).join();
  dev.synchronize();
  EXPECT_TRUE(first_intact);
}

// A block freed by another thread on its per-thread stream waits for the
// allocating thread's per-thread stream, which only that thread can name.
TEST_F(caching_cuda_rules, AFreeFromAnotherThreadWaitsForTheAllocatingThreadsStream) {
  constexpr std::size_t bytes = 32 * kib;
  std::atomic<bool> intact{false};
  void* p = nullptr;
  std::thread([&] {
    p = cache->allocate(bytes, stream::per_thread());
    slow_writer(dev, stream::per_thread(), p, bytes, 3, intact);
  }).join();
  std::thread([&] {
    cache->deallocate(p, bytes, stream::per_thread());
    void* q = cache->allocate(bytes, stream::per_thread());
    dev.launch_kernel(stream::per_thread(), [q, bytes] { fill(q, bytes, 4); });
  }).join();
  dev.synchronize();
  EXPECT_TRUE(intact);
}

// CUDA hands a destroyed stream's handle to the next stream: blocks cached
// with the old stream are not the new one's to take at once.
TEST_F(caching_cuda_rules, ARecycledHandleIsAnotherStream) {
  constexpr std::size_t bytes = 128 * kib;
  const stream old = dev.create_stream();
  std::atomic<bool> intact{false};
  void* p = cache->allocate(bytes, old);
  slow_writer(dev, old, p, bytes, 5, intact);
  cache->deallocate(p, bytes, old);
  dev.destroy_stream(old);
  const stream fresh = dev.create_stream();
  ASSERT_EQ(fresh, old);  // the simulator recycles the handle, as CUDA does
  void* q = cache->allocate(bytes, fresh);
  dev.launch_kernel(fresh, [q] { fill(q, bytes, 6); });
  dev.synchronize();
  EXPECT_TRUE(intact);
  EXPECT_TRUE(holds(q, bytes, 6));
  dev.destroy_stream(fresh);
}

// Announced, a destruction costs no wait on the host: what was cached with the
// stream waits for an event recorded on it, and comes back once it completes.
TEST_F(caching_cuda_rules, AnAnnouncedDestructionHoldsItsBlocksUntilItsWorkRuns) {
  constexpr std::size_t bytes = 128 * kib;
  const stream old = dev.create_stream();
  std::atomic<bool> intact{false};
  void* p = cache->allocate(bytes, old);
  slow_writer(dev, old, p, bytes, 7, intact);
  cache->deallocate(p, bytes, old);
  cache->stream_destroyed(old);
  dev.destroy_stream(old);
  const memory_snapshot shot = cache->snapshot();
  ASSERT_EQ(shot.segments.size(), 1u);
  EXPECT_EQ(shot.segments[0].blocks[0].state, block_state::active_pending_free);
  const stream fresh = dev.create_stream();
  void* q = cache->allocate(bytes, fresh);
  EXPECT_NE(q, p);
  dev.synchronize();
  EXPECT_TRUE(intact);
  const stream third = dev.create_stream();
  EXPECT_EQ(cache->allocate(bytes, third), p);  // settled: any stream takes it at once
  EXPECT_EQ(cache->stats().cross_stream_reuses, 0u);
  dev.destroy_stream(fresh);
  dev.destroy_stream(third);
}

// A block handed out on a stream that is then destroyed is freed later under
// the old handle, which names another stream by then.
TEST_F(caching_cuda_rules, ABlockOfADestroyedStreamIsFreedSafelyUnderItsOldHandle) {
  constexpr std::size_t bytes = 64 * kib;
  const stream old = dev.create_stream();
  std::atomic<bool> intact{false};
  void* p = cache->allocate(bytes, old);
  slow_writer(dev, old, p, bytes, 8, intact);
  cache->stream_destroyed(old);
  dev.destroy_stream(old);
  const stream fresh = dev.create_stream();
  cache->deallocate(p, bytes, fresh);
  void* q = cache->allocate(bytes, fresh);
  dev.launch_kernel(fresh, [q] { fill(q, bytes, 9); });
  dev.synchronize();
  EXPECT_TRUE(intact);
  dev.destroy_stream(fresh);
}

// cudaFree does not wait: empty_cache waits for the streams that last used a
// segment before it gives the segment back.
TEST_F(caching_cuda_rules, EmptyCacheWaitsForTheWorkThatUsedASegment) {
  const stream s = dev.create_stream();
  void* p = cache->allocate(mib, s);
  dev.launch_kernel(s, [] { std::this_thread::sleep_for(30ms); });
  dev.memset_async(p, 1, mib, s);
  cache->deallocate(p, mib, s);
  cache->empty_cache();
  EXPECT_EQ(cache->stats().all.reserved_bytes.current, 0);
  dev.synchronize();
  dev.destroy_stream(s);
}

TEST_F(caching_cuda_rules, GarbageCollectionWaitsForTheWorkThatUsedASegment) {
  caching_config config;
  config.garbage_collection_threshold = 0.1;  // of 256 MiB: the second 20 MiB segment is over
  make(config);
  const stream s = dev.create_stream();
  void* p = cache->allocate(12 * mib, s);
  dev.launch_kernel(s, [] { std::this_thread::sleep_for(30ms); });
  dev.memset_async(p, 1, 12 * mib, s);
  cache->deallocate(p, 12 * mib, s);
  void* q = cache->allocate(24 * mib, s);
  EXPECT_EQ(cache->stats().num_device_frees, 1u);
  cache->deallocate(q, 24 * mib, s);
  dev.synchronize();
  dev.destroy_stream(s);
}

TEST_F(caching_cuda_rules, AllocatingOnACapturingStreamOutsideAGraphPoolIsRefused) {
  const stream s = dev.create_stream();
  dev.begin_capture(s, capture_mode::global);
  EXPECT_EQ(error_of([&] { cache->allocate(kib, s); }), errc::capture);
  dev.destroy_graph(dev.end_capture(s));  // the refusal made no unsafe call
  dev.destroy_stream(s);
}

// The capture neither asks the device for memory nor queries an event: with
// events pending and a global capture under way, either would invalidate it.
TEST_F(caching_cuda_rules, ACaptureAllocatesFromItsGraphPool) {
  caching_config config;
  config.graph_pool_reserve = 8 * mib;
  make(config);
  const stream s = dev.create_stream();
  const stream side = dev.create_stream();
  void* used_on_side = cache->allocate(64 * kib, s);
  cache->record_stream(used_on_side, side);
  dev.launch_kernel(side, [] { std::this_thread::sleep_for(20ms); });
  cache->deallocate(used_on_side, 64 * kib, s);  // an event is pending now
  const std::uint64_t device_allocs = cache->stats().num_device_allocs;

  const graph_pool_id pool{0, 1};
  cache->begin_allocate_to_pool(pool, [s](stream candidate) { return candidate == s; });
  EXPECT_GT(cache->stats().num_device_allocs, device_allocs);  // set aside before the capture
  const std::uint64_t set_aside = cache->stats().num_device_allocs;
  dev.begin_capture(s, capture_mode::global);
  void* a = cache->allocate(mib, s);
  dev.memset_async(a, 3, mib, s);
  void* b = cache->allocate(3 * mib, s);
  cache->deallocate(a, mib, s);
  EXPECT_EQ(cache->allocate(mib, s), a);  // reused within the capture, in stream order
  EXPECT_EQ(cache->stats().num_device_allocs, set_aside);
  const graph g = dev.end_capture(s);
  cache->end_allocate_to_pool(pool);
  dev.launch(g, s);
  dev.synchronize();
  cache->deallocate(b, 3 * mib, s);
  cache->release_pool(pool);
  dev.destroy_graph(g);
  dev.destroy_stream(s);
  dev.destroy_stream(side);
}

TEST_F(caching_cuda_rules, AGraphPoolThatRunsOutSaysHowToSetMoreAside) {
  caching_config config;
  config.graph_pool_reserve = 0;
  make(config);
  const stream s = dev.create_stream();
  const graph_pool_id pool{0, 2};
  cache->begin_allocate_to_pool(pool, [s](stream candidate) { return candidate == s; });
  dev.begin_capture(s, capture_mode::global);
  try {
    cache->allocate(mib, s);
    FAIL() << "a capture took memory from the device";
  } catch (const device_error& e) {
    EXPECT_EQ(e.code(), errc::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("graph_pool_reserve"), std::string::npos) << e.what();
  }
  dev.destroy_graph(dev.end_capture(s));
  cache->end_allocate_to_pool(pool);
  cache->release_pool(pool);
  dev.destroy_stream(s);
}

// Segments idle when the pool began serve the capture without the device.
TEST_F(caching_cuda_rules, AGraphPoolAdoptsSegmentsThatWereIdleWhenItBegan) {
  caching_config config;
  config.graph_pool_reserve = 0;
  make(config);
  const stream s = dev.create_stream();
  cache->deallocate(cache->allocate(mib, s), mib, s);
  const std::uint64_t device_allocs = cache->stats().num_device_allocs;
  const graph_pool_id pool{0, 3};
  cache->begin_allocate_to_pool(pool, [s](stream candidate) { return candidate == s; });
  dev.begin_capture(s, capture_mode::global);
  void* p = cache->allocate(mib, s);
  EXPECT_NE(p, nullptr);
  dev.destroy_graph(dev.end_capture(s));
  cache->end_allocate_to_pool(pool);
  EXPECT_EQ(cache->stats().num_device_allocs, device_allocs);
  EXPECT_TRUE(cache->snapshot().segments[0].graph_pool);
  cache->deallocate(p, mib, s);
  cache->release_pool(pool);
  EXPECT_FALSE(cache->snapshot().segments[0].graph_pool);
  dev.destroy_stream(s);
}

// A free that needs an event on the capturing stream would record it into
// the graph: it waits until the capture is over.
TEST_F(caching_cuda_rules, AFreeDuringACaptureRecordsNoEventUntilTheCaptureEnds) {
  const stream s = dev.create_stream();
  const stream other = dev.create_stream();
  void* before = cache->allocate(64 * kib, s);
  void* warm = cache->allocate(64 * kib, other);
  cache->deallocate(warm, 64 * kib, other);
  const graph_pool_id pool{0, 4};
  cache->begin_allocate_to_pool(pool, [s](stream candidate) { return candidate == s; });
  dev.begin_capture(s, capture_mode::global);
  cache->deallocate(before, 64 * kib, other);  // used on s, freed on other
  EXPECT_EQ(cache->allocate(64 * kib, other), warm);
  const graph g = dev.end_capture(s);
  cache->end_allocate_to_pool(pool);
  cache->deallocate(warm, 64 * kib, other);
  cache->allocate(kib, other);  // no capture now: the held-back free records its event
  dev.synchronize();
  cache->release_pool(pool);
  dev.destroy_graph(g);
  dev.destroy_stream(s);
  dev.destroy_stream(other);
}

TEST(caching_cuda_rules_devices, TheSnapshotNamesTheDevice) {
  simulated_system system(2);
  caching_allocator cache(system.gpu(1));
  void* p = cache.allocate(kib, stream{});
  const memory_snapshot shot = cache.snapshot();
  EXPECT_EQ(shot.device, 1);
  EXPECT_NE(to_json(shot).find("\"device\":1"), std::string::npos) << to_json(shot);
  cache.deallocate(p, kib, stream{});
}

}  // namespace
}  // namespace strata::gpu::testing
