// Seed 003 (NexusFix SessionHeap), strata's session heap beside the seed's strategies:
// per-message time of bursts, single allocations and frees, each strategy measured in
// turn within every repetition, with the timers of the malloc scenarios.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "sample_statistics.hpp"
#include "session_strategies.hpp"
#include "spsc_ring.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

constexpr std::size_t burst_buffer_bytes = 64u << 20;

// Nanoseconds per message of one burst of blocks.size() allocations; the messages
// are then freed (or the buffer rewound) untimed.
template <class Strategy>
double burst_ns(Strategy& strategy, std::vector<void*>& blocks) {
  const double start = monotonic_ns();
  for (auto& block : blocks) block = strategy.allocate();
  const double per_message = (monotonic_ns() - start) / static_cast<double>(blocks.size());
  strategy.start_over(blocks);
  return per_message;
}

// One allocation timed alone with the cycle counter; the block is kept in `kept`.
template <class Strategy>
double single_allocation_ns(Strategy& strategy, void*& kept) {
  const std::uint64_t start = cycle_stamp();
  kept = strategy.allocate();
  return ticks_to_ns(cycle_stamp() - start);
}

// Frees `blocks` one by one on this thread, each timed alone.
template <class Strategy>
void time_local_frees(Strategy& strategy, std::vector<void*>& blocks, std::vector<double>* out) {
  for (auto& block : blocks) block = strategy.allocate();
  for (void* block : blocks) {
    const std::uint64_t start = cycle_stamp();
    strategy.deallocate(block);
    const std::uint64_t ticks = cycle_stamp() - start;
    if (out != nullptr) out->push_back(ticks_to_ns(ticks));
  }
  strategy.start_over({});
}

// A producer thread allocates `messages` from a session of its own and hands them to
// a consumer thread, which frees each, timed alone; the session ends once all are freed.
template <class Strategy>
void time_remote_frees(int messages, std::vector<double>* out) {
  auto ring = std::make_unique<spsc_ring<1024>>();
  std::atomic<Strategy*> session{nullptr};
  std::atomic<bool> consumed{false};
  run_thread_team(2, [&](int index) {
    if (index == 0) {
      Strategy own(static_cast<std::size_t>(messages + 64) * session_message_bytes);
      session.store(&own, std::memory_order_release);
      for (int i = 0; i < messages; ++i) ring->push(own.allocate());
      while (!consumed.load(std::memory_order_acquire)) std::this_thread::yield();
      return;
    }
    for (int i = 0; i < messages; ++i) {
      void* block = ring->pop();
      Strategy* owner = session.load(std::memory_order_acquire);
      const std::uint64_t start = cycle_stamp();
      owner->deallocate(block);
      const std::uint64_t ticks = cycle_stamp() - start;
      if (out != nullptr) out->push_back(ticks_to_ns(ticks));
    }
    consumed.store(true, std::memory_order_release);
  });
}

// The label of a burst size: "1000 msgs".
std::string burst_label(int count) {
  return std::to_string(count) + " msgs";
}

}  // namespace

// Bursts of 100 to 10,000 messages from each strategy in turn; a burst's time divided
// by its messages is one sample. Each repetition records P50 and P99 over its bursts;
// the distribution pools the bursts of all repetitions.
void session_heap_bursts(const run_settings& settings, recorder& out) {
  const int bursts_per_round = settings.full ? 500 : 100;
  std::vector<void*> blocks;
  session_strategies all(burst_buffer_bytes, burst_buffer_bytes, burst_buffer_bytes,
                         burst_buffer_bytes, burst_buffer_bytes);
  run_rounds(settings, [&](bool measured) {
    for (int count : {100, 500, 1000, 5000, 10'000}) {
      blocks.resize(static_cast<std::size_t>(count));
      std::vector<std::vector<double>> samples(std::tuple_size_v<session_strategies>);
      for (int burst = 0; burst < bursts_per_round; ++burst) {
        std::size_t index = 0;
        for_each_strategy(
            all, [&](auto& strategy) { samples[index++].push_back(burst_ns(strategy, blocks)); });
      }
      if (!measured) continue;
      std::size_t index = 0;
      for_each_strategy(all, [&](auto& strategy) {
        const std::string name(strategy.name);
        std::vector<double>& mine = samples[index++];
        auto& pooled = out.latency_for(name, burst_label(count));
        pooled.insert(pooled.end(), mine.begin(), mine.end());
        std::sort(mine.begin(), mine.end());
        out.add_for(name, "P50, " + burst_label(count), "ns/msg", quantile_of_sorted(mine, 0.5));
        out.add_for(name, "P99, " + burst_label(count), "ns/msg", quantile_of_sorted(mine, 0.99));
      });
    }
  });
}

// One 256-byte allocation timed alone, each strategy in turn; the buffers are rewound
// and the heap blocks freed at the end of each repetition.
void session_heap_latency(const run_settings& settings, recorder& out) {
  const int iterations = settings.full ? 100'000 : 20'000;
  const int messages = settings.full ? 100'000 : 20'000;
  std::vector<void*> kept;
  std::vector<void*> blocks(1000);
  session_strategies all(burst_buffer_bytes, burst_buffer_bytes, burst_buffer_bytes,
                         burst_buffer_bytes, burst_buffer_bytes);
  run_rounds(settings, [&](bool measured) {
    std::vector<std::vector<double>> samples(std::tuple_size_v<session_strategies>);
    std::vector<std::vector<void*>> live(std::tuple_size_v<session_strategies>,
                                         std::vector<void*>(static_cast<std::size_t>(iterations)));
    for (int i = 0; i < iterations; ++i) {
      std::size_t index = 0;
      for_each_strategy(all, [&](auto& strategy) {
        samples[index].push_back(single_allocation_ns(strategy, live[index][i]));
        ++index;
      });
    }
    std::size_t index = 0;
    for_each_strategy(all, [&](auto& strategy) {
      strategy.start_over(live[index]);
      if (measured) {
        auto& pooled = out.latency_for(std::string(strategy.name), "single allocation");
        pooled.insert(pooled.end(), samples[index].begin(), samples[index].end());
      }
      ++index;
    });
    for_each_strategy(all, [&](auto& strategy) {
      std::vector<double>* sink =
          measured ? &out.latency_for(std::string(strategy.name), "free, same thread") : nullptr;
      for (int done = 0; done < messages; done += 1000) time_local_frees(strategy, blocks, sink);
    });
    for_each_strategy(all, [&](auto& strategy) {
      using strategy_type = std::remove_reference_t<decltype(strategy)>;
      if constexpr (strategy_type::frees_from_any_thread) {
        std::vector<double>* sink =
            measured ? &out.latency_for(std::string(strategy.name), "free, other thread") : nullptr;
        time_remote_frees<strategy_type>(messages, sink);
      }
    });
  });
  out.fact("timer overhead subtracted (ns)", cycle_clock().empty_measurement_ns);
  out.fact("mimalloc heap", mimalloc_heap_available() ? "measured" : "libmimalloc.so.2 absent");
  out.fact("free, other thread", "not for the std::pmr resources (not thread-safe)");
}

}  // namespace strata_bench
