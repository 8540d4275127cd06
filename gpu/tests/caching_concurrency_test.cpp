// 8 threads allocating on 4 streams through one caching allocator: every
// block's stream work sees only its own pattern, the statistics still add up,
// and empty_cache gives the device all its memory back.
#include "caching_fixture.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

using caching_concurrency = caching_test;

TEST_F(caching_concurrency, EightThreadsOnFourStreams) {
  constexpr int threads = 8;
  constexpr int rounds = 300;
  const std::size_t full = sim->memory().free;
  std::atomic<int> corrupt{0};
  std::atomic<int> unexpected{0};

  // One thread's rounds: each allocates on a stream, queues work there that
  // writes a pattern, yields and checks it, sometimes checks it again on
  // another stream that waited for the first (declared with record_stream), and frees it in stream
  // order.
  auto run = [&](int id) {
    try {
      std::vector<void*> kept;
      const event hop = sim->create_event();
      for (int r = 0; r < rounds; ++r) {
        const stream s = streams[static_cast<std::size_t>(id + r) % 4];
        const std::size_t bytes = (r % 7 == 0) ? (1 + r % 3) * mib + 1000 : (1 + r % 16) * 3 * kib;
        void* p = cache->allocate(bytes, s);
        const auto seed = static_cast<unsigned>(id * 1000 + r);
        const std::size_t span = bytes < 64 * kib ? bytes : 64 * kib;
        sim->launch_host(s, [p, span, seed, &corrupt] {
          fill(p, span, seed);
          std::this_thread::yield();
          if (!holds(p, span, seed)) ++corrupt;
        });
        if (r % 5 == 0) {
          const stream other = streams[static_cast<std::size_t>(id + r + 1) % 4];
          sim->record(hop, s);
          sim->wait(other, hop);
          sim->launch_host(other, [p, span, seed, &corrupt] {
            if (!holds(p, span, seed)) ++corrupt;
          });
          cache->record_stream(p, other);
        }
        if (r % 11 == 0) {
          kept.push_back(p);
        } else {
          cache->deallocate(p, bytes, s);
        }
      }
      // Kept blocks go back in the order of the streams they were used on.
      for (void* p : kept) cache->deallocate(p);
      sim->destroy_event(hop);
    } catch (const device_error&) {
      ++unexpected;
    }
  };
  std::vector<std::thread> workers;
  for (int id = 0; id < threads; ++id) workers.emplace_back(run, id);
  for (std::thread& worker : workers) worker.join();
  sim->synchronize();

  EXPECT_EQ(corrupt.load(), 0);
  EXPECT_EQ(unexpected.load(), 0);
  expect_consistent();
  EXPECT_EQ(cache->stats().all.allocation.current, 0);
  cache->empty_cache();
  EXPECT_EQ(sim->memory().free, full);
  EXPECT_EQ(cache->stats().all.reserved_bytes.current, 0);
}

}  // namespace
}  // namespace strata::gpu::testing
