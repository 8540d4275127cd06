// Seed 003 (NexusFix SessionHeap), the life of a session for each strategy: cleanup
// after 1,000 messages, overflow of a 4 KB buffer, and the end of a session that
// holds 1, 16 or 64 MiB.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "session_strategies.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// Makes a session over `buffer_bytes`, fills it with `count` messages (each written
// once, untimed) and returns the nanoseconds its end() takes; negative if unusable.
template <class Strategy>
double session_end_ns(std::size_t buffer_bytes, std::size_t count, std::vector<void*>& blocks) {
  Strategy session(buffer_bytes);
  if (!session.usable()) return -1;
  blocks.resize(count);
  for (auto& block : blocks) {
    block = session.allocate();
    std::memset(block, 1, session_message_bytes);
  }
  const double start = monotonic_ns();
  session.end(blocks);
  return monotonic_ns() - start;
}

// Nanoseconds per message of `count` messages into a fresh session whose buffer holds
// `buffer_bytes`; the session then ends, untimed. Negative if unusable.
template <class Strategy>
double fresh_burst_ns(std::size_t buffer_bytes, int count, std::vector<void*>& blocks) {
  Strategy session(buffer_bytes);
  if (!session.usable()) return -1;
  blocks.resize(static_cast<std::size_t>(count));
  const double start = monotonic_ns();
  for (auto& block : blocks) block = session.allocate();
  const double per_message = (monotonic_ns() - start) / count;
  session.end(blocks);
  return per_message;
}

// The median of a repetition's samples (they are reordered).
double median_of(std::vector<double>& samples) {
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

// Cleanup of 1,000 messages, 100 messages into a 4 KB buffer (most of them overflow)
// beside 100 into a 1 MiB one (none do), and the end of a session of 1, 16 and 64 MiB,
// for each strategy in turn.
void session_heap_lifetime(const run_settings& settings, recorder& out) {
  const int cleanups = settings.full ? 1000 : 200;
  const int overflows = settings.full ? 1000 : 300;
  const int destroys = settings.full ? 10 : 3;
  std::vector<void*> blocks;
  run_rounds(settings, [&](bool measured) {
    for_each_strategy_type([&](auto* tag) {
      using strategy_type = std::remove_pointer_t<decltype(tag)>;
      const std::string name = strategy_name<strategy_type>();
      std::vector<double> samples;
      for (int i = 0; i < cleanups; ++i) {
        const double ns = session_end_ns<strategy_type>(1u << 20, 1000, blocks);
        if (ns >= 0) samples.push_back(ns);
      }
      if (!measured || samples.empty()) return;
      auto& pooled = out.latency_for(name, "cleanup of 1,000 messages");
      pooled.insert(pooled.end(), samples.begin(), samples.end());
      out.add_for(name, "cleanup of 1,000 messages", "ns", median_of(samples));
    });
    for_each_strategy_type([&](auto* tag) {
      using strategy_type = std::remove_pointer_t<decltype(tag)>;
      std::vector<double> overflowing, fitting;
      for (int i = 0; i < overflows; ++i) {
        const double ns = fresh_burst_ns<strategy_type>(4096, 100, blocks);
        if (ns < 0) return;
        overflowing.push_back(ns);
        fitting.push_back(fresh_burst_ns<strategy_type>(1u << 20, 100, blocks));
      }
      if (!measured) return;
      const std::string name = strategy_name<strategy_type>();
      const double overflow_ns = median_of(overflowing);
      const double fit_ns = median_of(fitting);
      out.add_for(name, "100 msgs into a 4 KB buffer", "ns/msg", overflow_ns);
      out.add_for(name, "100 msgs into a 1 MiB buffer", "ns/msg", fit_ns);
      out.add_for(name, "overflow degradation (4 KB / 1 MiB)", "×", overflow_ns / fit_ns);
    });
    for (std::size_t mebibytes : {1, 16, 64}) {
      const std::size_t bytes = mebibytes << 20;
      const std::size_t count = bytes / session_message_bytes - 1;
      for_each_strategy_type([&](auto* tag) {
        using strategy_type = std::remove_pointer_t<decltype(tag)>;
        std::vector<double> samples;
        for (int i = 0; i < destroys; ++i) {
          const double ns = session_end_ns<strategy_type>(bytes, count, blocks);
          if (ns >= 0) samples.push_back(ns / 1e3);
        }
        if (!measured || samples.empty()) return;
        out.add_for(strategy_name<strategy_type>(),
                    "end of a " + std::to_string(mebibytes) + " MiB session", "µs",
                    median_of(samples));
      });
    }
  });
  out.fact("mimalloc heap", mimalloc_heap_available() ? "measured" : "libmimalloc.so.2 absent");
}

}  // namespace strata_bench
