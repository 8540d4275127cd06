// The simulated device keeps CUDA's rules, never kinder: several devices and a
// current device per thread, the legacy and per-thread default streams and
// their implicit synchronisation, recycled stream handles, frees that do not
// wait (late work is reported), host functions on one thread, timing events,
// and stream capture with its restrictions.
#include "device_errors.hpp"

#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::gpu::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kib = 1024;

// Violations are recorded rather than fatal, so a test can look at them.
simulated_config recording() {
  simulated_config config;
  config.capacity = 64 << 20;
  config.on_violation = violation_policy::record;
  return config;
}

// A kernel that keeps its stream busy for a while.
void busy(simulated_device& dev, stream s, std::chrono::milliseconds how_long) {
  dev.launch_kernel(s, [how_long] { std::this_thread::sleep_for(how_long); });
}

// What `body` returns when run on a thread of its own.
template <class Body>
auto on_another_thread(Body body) {
  decltype(body()) result{};
  std::thread([&] { result = body(); }).join();
  return result;
}

TEST(simulated_cuda_rules, EachHostThreadHasItsOwnCurrentDevice) {
  simulated_system system(2, recording());
  EXPECT_EQ(system.current_device(), 0);
  system.set_current_device(1);
  EXPECT_EQ(system.current_device(), 1);
  EXPECT_EQ(on_another_thread([&] { return system.current_device(); }), 0);
  EXPECT_EQ(error_of([&] { system.set_current_device(2); }), errc::invalid_argument);
  EXPECT_EQ(system.gpu(1).ordinal(), 1);
}

TEST(simulated_cuda_rules, TheLegacyStreamIsOnePerDeviceAndThePerThreadStreamOnePerThread) {
  simulated_system system(2, recording());
  simulated_device& zero = system.gpu(0);
  simulated_device& one = system.gpu(1);
  EXPECT_EQ(zero.identify(stream{}), zero.identify(stream::legacy()));
  EXPECT_NE(zero.identify(stream{}), one.identify(stream{}));
  const stream_id mine = zero.identify(stream::per_thread());
  EXPECT_EQ(zero.identify(stream::per_thread()), mine);
  EXPECT_NE(mine, zero.identify(stream{}));
  EXPECT_NE(on_another_thread([&] { return zero.identify(stream::per_thread()); }), mine);
  EXPECT_NE(one.identify(stream::per_thread()), mine);
}

TEST(simulated_cuda_rules, TheLegacyStreamWaitsForPerThreadStreamsAndTheyForIt) {
  simulated_device dev(recording());
  std::atomic<int> order{0};
  int per_thread_done = 0;
  int legacy_ran = 0;
  dev.launch_kernel(stream::per_thread(), [&] {
    std::this_thread::sleep_for(30ms);
    per_thread_done = ++order;
  });
  dev.launch_kernel(stream{}, [&] { legacy_ran = ++order; });
  int per_thread_after = 0;
  dev.launch_kernel(stream::per_thread(), [&] { per_thread_after = ++order; });
  dev.synchronize();
  EXPECT_EQ(per_thread_done, 1);
  EXPECT_EQ(legacy_ran, 2);
  EXPECT_EQ(per_thread_after, 3);
}

TEST(simulated_cuda_rules, CreatedStreamsDoNotSynchroniseWithTheLegacyStream) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  std::atomic<bool> legacy_done{false};
  std::atomic<bool> ran_before_legacy{false};
  busy(dev, stream{}, 50ms);
  dev.launch_kernel(stream{}, [&] { legacy_done = true; });
  dev.launch_kernel(s, [&] { ran_before_legacy = !legacy_done; });
  dev.synchronize(s);
  EXPECT_TRUE(ran_before_legacy);
  dev.synchronize();
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, ADestroyedStreamsHandleIsTheNextOneHandedOut) {
  simulated_device dev(recording());
  const stream first = dev.create_stream();
  const stream_id first_id = dev.identify(first);
  dev.destroy_stream(first);
  EXPECT_EQ(error_of([&] { dev.identify(first); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.launch_kernel(first, [] {}); }), errc::invalid_argument);
  const stream second = dev.create_stream();
  EXPECT_EQ(second, first);
  EXPECT_NE(dev.identify(second), first_id);
  dev.destroy_stream(second);
}

TEST(simulated_cuda_rules, DestroyingAStreamReturnsAtOnceAndItsWorkStillRuns) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  std::atomic<int> runs{0};
  busy(dev, s, 30ms);
  for (int i = 0; i < 10; ++i) dev.launch_kernel(s, [&runs] { ++runs; });
  dev.destroy_stream(s);
  EXPECT_LT(runs, 10);
  dev.synchronize();
  EXPECT_EQ(runs, 10);
}

TEST(simulated_cuda_rules, ASynchronousFreeDoesNotWaitAndWorkQueuedBeforeItIsReported) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  void* block = dev.allocate(16 * kib);
  busy(dev, s, 30ms);
  dev.memset_async(block, 1, 16 * kib, s);
  const auto before = std::chrono::steady_clock::now();
  dev.deallocate(block);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 25ms);
  dev.synchronize();
  const std::vector<std::string> seen = dev.system().violations();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("memset_async"), std::string::npos) << seen[0];
  EXPECT_NE(seen[0].find("ran after deallocate"), std::string::npos) << seen[0];
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, FreedMemoryWrittenByLateWorkIsFoundByItsPoison) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  auto* block = static_cast<unsigned char*>(dev.allocate(4 * kib));
  busy(dev, s, 30ms);
  dev.launch_kernel(s, [block] { block[100] = 7; });
  dev.deallocate(block);
  dev.synchronize();
  const std::vector<std::string> seen = dev.system().violations();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("byte 100 was written after the free"), std::string::npos) << seen[0];
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, PinnedMemoryFreedUnderAQueuedCopyIsReported) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  void* pinned = dev.allocate_pinned(8 * kib);
  void* block = dev.allocate(8 * kib);
  busy(dev, s, 30ms);
  dev.copy_async(block, pinned, 8 * kib, copy_kind::host_to_device, s);
  dev.deallocate_pinned(pinned);
  dev.synchronize();
  const std::vector<std::string> seen = dev.system().violations();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("deallocate_pinned"), std::string::npos) << seen[0];
  dev.deallocate(block);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, WorkThatEndsBeforeTheFreeIsNoViolation) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  void* block = dev.allocate(16 * kib);
  dev.memset_async(block, 1, 16 * kib, s);
  dev.synchronize(s);
  dev.deallocate(block);
  dev.synchronize();
  EXPECT_TRUE(dev.system().violations().empty());
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, HostFunctionsRunOnOneThreadInOrder) {
  simulated_device dev(recording());
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::vector<int> order;
  std::atomic<bool> held_open{false};
  // A host function that blocks holds the other stream's host functions too,
  // but not its kernels.
  dev.launch_host(a, [&] {
    std::this_thread::sleep_for(40ms);
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
    order.push_back(1);
    held_open = true;
  });
  std::atomic<bool> kernel_ran_while_held{false};
  std::this_thread::sleep_for(5ms);
  dev.launch_kernel(b, [&] { kernel_ran_while_held = !held_open; });
  dev.launch_host(b, [&] {
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
    order.push_back(2);
  });
  dev.synchronize();
  EXPECT_TRUE(kernel_ran_while_held);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(threads.size(), 1u);
  dev.destroy_stream(a);
  dev.destroy_stream(b);
}

TEST(simulated_cuda_rules, AHostFunctionMayNotCallTheDevice) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  dev.launch_host(s, [&dev] { dev.allocate(kib); });
  try {
    dev.synchronize(s);
    FAIL() << "the device call from a host function was accepted";
  } catch (const device_error& e) {
    EXPECT_EQ(e.code(), errc::backend);
    EXPECT_NE(std::string(e.what()).find("from a host function"), std::string::npos) << e.what();
  }
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, AHostFunctionsExceptionSurfacesAtTheNextSynchronisationOnce) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  dev.launch_host(s, [] { throw std::runtime_error("checksum mismatch"); });
  int later = 0;
  dev.launch_host(s, [&later] { later = 1; });
  try {
    dev.synchronize();
    FAIL() << "the host function's exception was lost";
  } catch (const device_error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(later, 1);
  EXPECT_NO_THROW(dev.synchronize(s));
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, OnlyTimingEventsMeasureTime) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  const event start = dev.create_event(event_timing::enabled);
  const event end = dev.create_event(event_timing::enabled);
  const event plain = dev.create_event();
  dev.record(start, s);
  busy(dev, s, 20ms);
  dev.record(end, s);
  dev.record(plain, s);
  dev.synchronize(s);
  EXPECT_GE(dev.elapsed(start, end), 20ms);
  EXPECT_EQ(error_of([&] { dev.elapsed(start, plain); }), errc::invalid_argument);
  busy(dev, s, 30ms);
  dev.record(end, s);
  EXPECT_EQ(error_of([&] { dev.elapsed(start, end); }), errc::not_ready);
  dev.synchronize(s);
  for (event e : {start, end, plain}) dev.destroy_event(e);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, ACapturedStreamRecordsItsWorkAndTheGraphReplaysIt) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  EXPECT_EQ(error_of([&] { dev.begin_capture(stream{}, capture_mode::global); }),
            errc::invalid_argument);
  std::atomic<int> runs{0};
  dev.begin_capture(s, capture_mode::global);
  EXPECT_EQ(dev.capture_state(s), capture_status::active);
  dev.launch_kernel(s, [&runs] { ++runs; });
  dev.launch_kernel(s, [&runs] { ++runs; });
  const graph g = dev.end_capture(s);
  EXPECT_EQ(dev.capture_state(s), capture_status::none);
  EXPECT_EQ(runs, 0);
  dev.launch(g, s);
  dev.launch(g, s);
  dev.synchronize(s);
  EXPECT_EQ(runs, 4);
  dev.destroy_graph(g);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, UnsafeCallsDuringAGlobalCaptureFailOnEveryThreadAndInvalidateIt) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  const event e = dev.create_event();
  dev.begin_capture(s, capture_mode::global);
  EXPECT_EQ(on_another_thread([&] { return error_of([&] { dev.allocate(kib); }); }), errc::capture);
  EXPECT_EQ(dev.capture_state(s), capture_status::invalidated);
  EXPECT_EQ(error_of([&] { dev.query(e); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev.end_capture(s); }), errc::capture);
  // The capture is over: the same calls are fine again.
  void* p = dev.allocate(kib);
  EXPECT_TRUE(dev.query(e));
  dev.deallocate(p);
  dev.destroy_event(e);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, ThisThreadModeRestrictsOnlyTheCapturingThread) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  dev.begin_capture(s, capture_mode::this_thread);
  EXPECT_EQ(on_another_thread([&] { return error_of([&] { dev.deallocate(dev.allocate(kib)); }); }),
            std::nullopt);
  EXPECT_EQ(error_of([&] { dev.synchronize(); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev.end_capture(s); }), errc::capture);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, ARelaxedThreadMayMakeUnsafeCallsDuringAGlobalCapture) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  dev.begin_capture(s, capture_mode::global);
  const auto relaxed = on_another_thread([&] {
    dev.system().exchange_capture_mode(capture_mode::relaxed);
    return error_of([&] { dev.deallocate(dev.allocate(kib)); });
  });
  EXPECT_EQ(relaxed, std::nullopt);
  EXPECT_EQ(dev.capture_state(s), capture_status::active);
  dev.destroy_graph(dev.end_capture(s));
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, ACapturingStreamMayNotBeSynchronisedNorWaitOnOutsideWork) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  const stream other = dev.create_stream();
  const event outside = dev.create_event();
  dev.record(outside, other);
  dev.begin_capture(s, capture_mode::relaxed);
  EXPECT_EQ(error_of([&] { dev.synchronize(s); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev.end_capture(s); }), errc::capture);
  dev.begin_capture(s, capture_mode::relaxed);
  busy(dev, other, 10ms);
  dev.record(outside, other);
  EXPECT_EQ(error_of([&] { dev.wait(s, outside); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev.end_capture(s); }), errc::capture);
  dev.synchronize();
  dev.destroy_event(outside);
  dev.destroy_stream(s);
  dev.destroy_stream(other);
}

TEST(simulated_cuda_rules, AnEventLastRecordedInACaptureCannotBeQueriedAfterIt) {
  simulated_device dev(recording());
  const stream s = dev.create_stream();
  const event e = dev.create_event();
  dev.begin_capture(s, capture_mode::relaxed);
  dev.record(e, s);
  const graph g = dev.end_capture(s);
  EXPECT_EQ(error_of([&] { dev.query(e); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev.synchronize(e); }), errc::capture);
  dev.record(e, s);
  EXPECT_NO_THROW(dev.synchronize(e));
  dev.destroy_graph(g);
  dev.destroy_event(e);
  dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, LaunchesOfOneGraphNeverOverlap) {
  simulated_device dev(recording());
  const stream capturing = dev.create_stream();
  const stream a = dev.create_stream();
  const stream b = dev.create_stream();
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  dev.begin_capture(capturing, capture_mode::global);
  dev.launch_kernel(capturing, [&] {
    const int now = ++running;
    if (now > most) most = now;
    std::this_thread::sleep_for(20ms);
    --running;
  });
  const graph g = dev.end_capture(capturing);
  dev.launch(g, a);
  dev.launch(g, b);
  dev.synchronize();
  EXPECT_EQ(most, 1);
  dev.destroy_graph(g);
  for (stream s : {capturing, a, b}) dev.destroy_stream(s);
}

TEST(simulated_cuda_rules, AStreamOfAnotherDeviceIsRefused) {
  simulated_system system(2, recording());
  const stream on_one = system.gpu(1).create_stream();
  const event on_zero = system.gpu(0).create_event();
  EXPECT_EQ(error_of([&] { system.gpu(0).record(on_zero, on_one); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { system.gpu(0).synchronize(on_one); }), errc::invalid_argument);
  system.gpu(0).destroy_event(on_zero);
  system.gpu(1).destroy_stream(on_one);
}

}  // namespace
}  // namespace strata::gpu::testing
