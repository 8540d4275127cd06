// A bounded soak: several threads allocate, check, resize and free blocks of
// every size class at random for minutes, handing blocks to each other to be
// freed, with collections along the way. Between rounds every block is freed
// and memory collected: the heap's counters must then balance and RSS fall back
// under a bound. Not in the default run (label soak):
//   SOAK_SECONDS=600 ctest --preset release -L soak
#include <pthread.h>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "os/os.hpp"
#include "strata/strata.h"

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr int threads = 4;
constexpr int rounds = 6;
constexpr std::uint64_t most_ops_per_round = 50'000'000;  // per thread
constexpr std::size_t most_live_bytes = 48 * MiB;         // per thread
constexpr std::size_t most_live_blocks = 4096;            // per thread
constexpr std::size_t mailbox_limit = 1024;
// What RSS may stay above its starting point once everything is freed and
// collected: segment headers, metadata and the test's own bookkeeping.
constexpr std::size_t rss_slack = 16 * MiB;

// Seconds the soak runs: SOAK_SECONDS, 180 by default.
double soak_seconds() {
  const char* text = std::getenv("SOAK_SECONDS");
  double seconds = text != nullptr ? std::atof(text) : 0;
  return seconds > 0 ? seconds : 180;
}

struct held_block {
  unsigned char* p;
  std::size_t size;
  std::uint64_t seed;
};

// The pattern byte at `offset` of a block written with `seed`.
unsigned char pattern(std::uint64_t seed, std::size_t offset) {
  return static_cast<unsigned char>((seed + offset * 0x9E3779B97F4A7C15u) >> 56);
}

// Offsets written and checked, the same for every block: the first 1 KiB,
// then one byte per 4 KiB page; with `tail` also the last 64 bytes.
template <class Visit>
void for_each_offset(std::size_t size, bool tail, Visit visit) {
  for (std::size_t i = 0; i < size && i < 1024; ++i) visit(i);
  for (std::size_t i = 4096; i < size; i += 4096) visit(i);
  if (tail && size > 1024)
    for (std::size_t i = size - 64; i < size; ++i) visit(i);
}

void fill(const held_block& b) {
  for_each_offset(b.size, true, [&](std::size_t i) { b.p[i] = pattern(b.seed, i); });
}
// Whether the block holds its pattern; with `tail` false only the offsets any
// longer block shares (what a realloc must have kept).
bool intact(const held_block& b, bool tail = true) {
  bool same = true;
  for_each_offset(b.size, tail, [&](std::size_t i) { same &= b.p[i] == pattern(b.seed, i); });
  return same;
}

// Blocks other threads handed to this one, to check and free.
struct mailbox {
  std::mutex lock;
  std::vector<held_block> blocks;
};

struct soak_state {
  mailbox boxes[threads];
  pthread_barrier_t barrier;
  std::atomic<std::uint64_t> damaged{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> ops{0};
};

std::size_t pick_size(std::mt19937_64& rng) {
  unsigned kind = rng() % 1000;
  if (kind < 600) return 1 + rng() % 1024;
  if (kind < 995) {
    std::uniform_real_distribution<double> exponent(10, 23);  // 1 KiB .. 8 MiB
    return static_cast<std::size_t>(std::exp2(exponent(rng)));
  }
  return 8 * MiB + rng() % (16 * MiB);
}

// One worker's round: random operations until the deadline or the op bound.
void work(soak_state& state, int self, std::mt19937_64& rng, std::vector<held_block>& live,
          std::chrono::steady_clock::time_point deadline) {
  std::size_t live_bytes = 0;
  for (const held_block& b : live) live_bytes += b.size;
  auto drop = [&](std::size_t index) {
    held_block b = live[index];
    live[index] = live.back();
    live.pop_back();
    live_bytes -= b.size;
    return b;
  };
  for (std::uint64_t op = 0; op < most_ops_per_round; ++op) {
    if (op % 1024 == 0 && std::chrono::steady_clock::now() >= deadline) break;
    unsigned kind = rng() % 100;
    if (kind < 45 && live.size() < most_live_blocks && live_bytes < most_live_bytes) {
      held_block b{nullptr, pick_size(rng), rng()};
      b.p = static_cast<unsigned char*>(kind < 40 ? strata_malloc(b.size)
                                                  : strata_malloc_aligned(b.size, 64 << rng() % 8));
      if (b.p == nullptr) {
        state.refused.fetch_add(1);
        continue;
      }
      fill(b);
      live.push_back(b);
      live_bytes += b.size;
    } else if (kind < 55 && !live.empty()) {
      std::size_t index = rng() % live.size();
      held_block& b = live[index];
      std::size_t size = pick_size(rng);
      auto* q = static_cast<unsigned char*>(strata_realloc(b.p, size));
      if (q == nullptr) {
        state.refused.fetch_add(1);
        continue;
      }
      held_block kept{q, size < b.size ? size : b.size, b.seed};
      if (!intact(kept, kept.size == b.size)) state.damaged.fetch_add(1);
      live_bytes += size - b.size;
      b = {q, size, rng()};
      fill(b);
    } else if (kind < 85 && !live.empty()) {
      held_block b = drop(rng() % live.size());
      if (!intact(b)) state.damaged.fetch_add(1);
      strata_free(b.p);
    } else if (kind < 97 && !live.empty()) {
      held_block b = drop(rng() % live.size());  // another thread frees it
      mailbox& box = state.boxes[(self + 1 + rng() % (threads - 1)) % threads];
      std::lock_guard<std::mutex> guard(box.lock);
      if (box.blocks.size() < mailbox_limit) {
        box.blocks.push_back(b);
      } else {
        if (!intact(b)) state.damaged.fetch_add(1);
        strata_free(b.p);
      }
    } else {
      std::vector<held_block> received;
      {
        std::lock_guard<std::mutex> guard(state.boxes[self].lock);
        received.swap(state.boxes[self].blocks);
      }
      for (const held_block& b : received) {
        if (!intact(b)) state.damaged.fetch_add(1);
        strata_free(b.p);
      }
      if (kind == 99) strata_collect(0);
    }
    state.ops.fetch_add(1, std::memory_order_relaxed);
  }
}

// Free everything a worker holds and what was handed to it.
void free_all(soak_state& state, int self, std::vector<held_block>& live) {
  for (const held_block& b : live) {
    if (!intact(b)) state.damaged.fetch_add(1);
    strata_free(b.p);
  }
  live.clear();
  std::lock_guard<std::mutex> guard(state.boxes[self].lock);
  for (const held_block& b : state.boxes[self].blocks) {
    if (!intact(b)) state.damaged.fetch_add(1);
    strata_free(b.p);
  }
  state.boxes[self].blocks.clear();
}

}  // namespace

TEST(Soak, ThreadsChurnEverySizeClassAndMemoryGoesBack) {
  const double seconds = soak_seconds();
  const auto round_length = std::chrono::duration<double>(seconds / rounds);
  soak_state state;
  for (mailbox& box : state.boxes) box.blocks.reserve(mailbox_limit);
  pthread_barrier_init(&state.barrier, nullptr, threads + 1);
  const std::size_t start_rss = strata::os::current_rss();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&state, t, round_length] {
      std::mt19937_64 rng(1000 + t);
      std::vector<held_block> live;
      live.reserve(most_live_blocks);
      for (int round = 0; round < rounds; ++round) {
        auto deadline =
            std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(round_length);
        work(state, t, rng, live, deadline);
        pthread_barrier_wait(&state.barrier);  // every thread stopped handing blocks out
        free_all(state, t, live);
        pthread_barrier_wait(&state.barrier);
        strata_collect(1);  // sends this thread's pending frees to their owners
        pthread_barrier_wait(&state.barrier);
        strata_collect(1);  // takes back what the others sent, gives memory back
        strata_stats_t own;
        strata_stats_get(&own);  // folds this thread's counts
        pthread_barrier_wait(&state.barrier);
        pthread_barrier_wait(&state.barrier);  // the main thread checked
      }
    });
  }
  for (int round = 0; round < rounds; ++round) {
    for (int wait = 0; wait < 4; ++wait) pthread_barrier_wait(&state.barrier);
    strata_collect(1);
    strata_stats_t s;
    strata_stats_get(&s);
    std::size_t rss = strata::os::current_rss();
    EXPECT_EQ(s.mallocs, s.frees) << "round " << round;
    EXPECT_EQ(s.in_use, 0u) << "round " << round;
    EXPECT_LE(rss, start_rss + rss_slack) << "round " << round << ": RSS " << rss / MiB
                                          << " MiB after freeing all, from " << start_rss / MiB;
    std::printf("round %d: RSS %zu MiB after freeing all (%zu MiB at the start)\n", round,
                rss / MiB, start_rss / MiB);
    pthread_barrier_wait(&state.barrier);
  }
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(state.damaged.load(), 0u);
  EXPECT_EQ(state.refused.load(), 0u);
  std::printf("%llu operations in %.0f s\n", static_cast<unsigned long long>(state.ops.load()),
              seconds);
}
