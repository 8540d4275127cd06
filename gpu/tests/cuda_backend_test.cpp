// The CUDA backend's own duties, on the emulated CUDA runtime where there is
// no GPU (STRATA_GPU_TEST_CUDA=emulated) and on libcudart where there is one:
// every call binds its device and leaves the caller's current device as it
// was, the null stream is its own device's legacy stream, streams are told
// apart by id, host functions may throw, timing events time, captures are
// CUDA's, and the stream-ordered pool is strata's own.
#include "device_errors.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/cuda.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

// The calling thread's current CUDA device.
int current_device() {
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  return device;
}

class cuda_backend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    dev = make_cuda_device(0);
  }

  void TearDown() override {
    if (dev) static_cast<void>(cudaSetDevice(0));
  }

  // The second device, or a skip where there is one only.
  void need_two() {
    if (cuda_device_count() < 2) GTEST_SKIP() << "one CUDA device";
  }

  std::unique_ptr<device> dev;
};

// PyTorch and CuPy keep their own current device: device 0's calls made while
// device 1 is current leave device 1 current, and use device 0's resources.
TEST_F(cuda_backend, EveryCallLeavesTheCallersCurrentDeviceAsItWas) {
  need_two();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  const stream s = dev->create_stream();
  EXPECT_EQ(current_device(), 1);
  const event e = dev->create_event();
  void* block = dev->allocate(4 * kib);
  pinned_buffer host(*dev, 4 * kib);
  host.fill(3);
  dev->copy_async(block, host.data(), 4 * kib, copy_kind::host_to_device, stream{});
  dev->memset_async(block, 0, kib, stream{});
  dev->record(e, stream{});
  dev->wait(s, e);
  dev->launch_host(s, [] {});
  EXPECT_EQ(current_device(), 1);
  dev->synchronize(e);
  EXPECT_TRUE(dev->query(e));
  dev->synchronize(stream{});
  EXPECT_NE(dev->identify(stream{}), 0u);
  dev->synchronize();
  dev->deallocate(block);
  dev->destroy_event(e);
  dev->destroy_stream(s);
  EXPECT_EQ(current_device(), 1);
}

// The null stream names the bound device's legacy stream: device 0's event
// recorded on it while device 1 is current is device 0's.
TEST_F(cuda_backend, TheNullStreamIsTheBoundDevicesLegacyStream) {
  need_two();
  const stream_id zero_legacy = dev->identify(stream{});
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(dev->identify(stream{}), zero_legacy);
  const event e = dev->create_event();
  EXPECT_NO_THROW(dev->record(e, stream{}));
  dev->synchronize(e);
  dev->destroy_event(e);
}

TEST_F(cuda_backend, IdentifyTellsStreamsApartWhateverTheirHandles) {
  const stream first = dev->create_stream();
  const stream_id first_id = dev->identify(first);
  dev->destroy_stream(first);
  const stream second = dev->create_stream();
  EXPECT_NE(dev->identify(second), first_id);
  const stream_id mine = dev->identify(stream::per_thread());
  stream_id theirs = 0;
  std::thread([&] { theirs = dev->identify(stream::per_thread()); }).join();
  EXPECT_NE(mine, theirs);
  EXPECT_NE(mine, dev->identify(stream{}));
  dev->destroy_stream(second);
}

TEST_F(cuda_backend, AHostFunctionsExceptionSurfacesAtTheNextSynchronisation) {
  const stream s = dev->create_stream();
  dev->launch_host(s, [] { throw std::runtime_error("bad checksum"); });
  try {
    dev->synchronize(s);
    FAIL() << "the host function's exception was lost";
  } catch (const device_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad checksum"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(dev->synchronize(s));
  dev->destroy_stream(s);
}

TEST_F(cuda_backend, TimingEventsMeasureAndOthersRefuse) {
  const stream s = dev->create_stream();
  const event start = dev->create_event(event_timing::enabled);
  const event end = dev->create_event(event_timing::enabled);
  const event plain = dev->create_event();
  dev->record(start, s);
  dev->launch_host(s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  dev->record(end, s);
  dev->record(plain, s);
  dev->synchronize(s);
  EXPECT_GE(dev->elapsed(start, end), std::chrono::milliseconds(4));
  EXPECT_TRUE(error_of([&] { dev->elapsed(start, plain); }).has_value());
  for (event e : {start, end, plain}) dev->destroy_event(e);
  dev->destroy_stream(s);
}

TEST_F(cuda_backend, ACaptureRecordsCopiesAndRefusesUnsafeCalls) {
  const stream s = dev->create_stream();
  void* block = dev->allocate(4 * kib);
  pinned_buffer in(*dev, 4 * kib), out(*dev, 4 * kib);
  dev->begin_capture(s, capture_mode::global);
  EXPECT_EQ(dev->capture_state(s), capture_status::active);
  dev->copy_async(block, in.data(), 4 * kib, copy_kind::host_to_device, s);
  dev->copy_async(out.data(), block, 4 * kib, copy_kind::device_to_host, s);
  const graph g = dev->end_capture(s);
  in.fill(9);
  dev->launch(g, s);
  dev->synchronize(s);
  EXPECT_TRUE(out.holds(9));
  dev->begin_capture(s, capture_mode::global);
  EXPECT_EQ(error_of([&] { dev->allocate(kib); }), errc::capture);
  EXPECT_EQ(error_of([&] { dev->end_capture(s); }), errc::capture);
  dev->destroy_graph(g);
  dev->deallocate(block);
  dev->destroy_stream(s);
}

// async_resource sets the release threshold of strata's own pool; the
// device's default pool (PyTorch's and CuPy's) keeps its own.
TEST_F(cuda_backend, TheStreamOrderedPoolIsStratasOwn) {
  async_resource pooled(*dev, std::size_t{64} << 20);
  const stream s = dev->create_stream();
  void* p = pooled.allocate(kib, s);
  pooled.deallocate(p, kib, s);
  dev->synchronize(s);
#ifndef STRATA_GPU_EMULATED_CUDA
  cudaMemPool_t shared = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&shared, 0), cudaSuccess);
  std::uint64_t threshold = 1;
  ASSERT_EQ(cudaMemPoolGetAttribute(shared, cudaMemPoolAttrReleaseThreshold, &threshold),
            cudaSuccess);
  EXPECT_EQ(threshold, 0u);
#endif
  dev->destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
