// 8 threads on 4 streams allocating and freeing in stream order, copying
// through the blocks and chaining the streams with events: every copy comes
// back intact, and the device holds nothing afterwards.
#include "backends.hpp"
#include "pinned_buffer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;

template <class Backend>
using device_concurrency = device_test<Backend>;
TYPED_TEST_SUITE(device_concurrency, backends, backend_names);

TYPED_TEST(device_concurrency, EightThreadsOnFourStreams) {
  device& dev = *this->dev;
  constexpr int threads = 8;
  constexpr int rounds = 200;
  constexpr std::size_t chunk = 4 * kib;
  std::vector<stream> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(dev.create_stream());
  const std::size_t free_before = dev.memory().free;
  std::atomic<int> corrupt{0};
  std::atomic<int> unexpected{0};

  // One thread's rounds: each round copies its pattern through a fresh
  // stream-ordered block into a slot of its own and checks it in stream order.
  auto run = [&](int id) {
    try {
      pinned_buffer pattern(dev, chunk);
      pattern.fill(static_cast<unsigned>(id));
      std::vector<std::unique_ptr<pinned_buffer>> slots;
      for (int r = 0; r < rounds; ++r) slots.push_back(std::make_unique<pinned_buffer>(dev, chunk));
      const event hop = dev.create_event();
      for (int r = 0; r < rounds; ++r) {
        const stream s = streams[(id + r) % 4];
        const std::size_t bytes = chunk * (1 + r % 4);
        void* block = dev.allocate_async(bytes, s);
        dev.copy_async(block, pattern.data(), chunk, copy_kind::host_to_device, s);
        dev.copy_async(slots[r]->data(), block, chunk, copy_kind::device_to_host, s);
        pinned_buffer* slot = slots[r].get();
        dev.launch_host(s, [slot, id, &corrupt] {
          if (!slot->holds(static_cast<unsigned>(id))) ++corrupt;
        });
        dev.deallocate_async(block, s);
        dev.record(hop, s);
        dev.wait(streams[(id + r + 1) % 4], hop);
        if (r % 50 == 0) dev.deallocate(dev.allocate(chunk));
      }
      dev.synchronize(hop);
      dev.synchronize();
      for (int r = 0; r < rounds; ++r)
        if (!slots[r]->holds(static_cast<unsigned>(id))) ++corrupt;
      dev.destroy_event(hop);
    } catch (const device_error&) {
      ++unexpected;
    }
  };
  std::vector<std::thread> workers;
  for (int id = 0; id < threads; ++id) workers.emplace_back(run, id);
  for (std::thread& worker : workers) worker.join();

  EXPECT_EQ(corrupt.load(), 0);
  EXPECT_EQ(unexpected.load(), 0);
  dev.synchronize();
  dev.trim_to(0);
  if (this->simulated()) {
    EXPECT_EQ(dev.memory().free, free_before);
  }
  for (stream s : streams) dev.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
