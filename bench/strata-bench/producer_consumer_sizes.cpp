// Seed 003's producer -> consumer pair with message sizes spread over 64 B-1 KiB: one
// thread allocates, a second frees, so every free is a cross-thread free, and with many
// sizes those frees land in many size classes at once (issue 21), where one message size
// keeps them all in one.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "cycle_clock.hpp"
#include "spsc_ring.hpp"
#include "thread_team.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// `count` message sizes drawn uniformly from 64 B to 1 KiB with a fixed seed, drawn up
// front so the producer's loop times malloc and not the random generator.
std::vector<std::uint32_t> spread_sizes(int count) {
  std::mt19937_64 random(21);
  std::uniform_int_distribution<std::uint32_t> size(64, 1024);
  std::vector<std::uint32_t> sizes(static_cast<std::size_t>(count));
  for (auto& each : sizes) each = size(random);
  return sizes;
}

// Nanoseconds of wall time per message for a producer that allocates the messages of
// `sizes` in order and writes their first byte, and a consumer that frees them.
double producer_consumer_ns(const std::vector<std::uint32_t>& sizes) {
  auto ring = std::make_unique<spsc_ring<1024>>();
  const double wall = run_thread_team(2, [&](int index) {
    for (std::uint32_t size : sizes) {
      if (index == 0) {
        auto* block = static_cast<char*>(std::malloc(size));
        block[0] = 1;
        ring->push(block);
      } else {
        std::free(ring->pop());
      }
    }
  });
  return wall / static_cast<double>(sizes.size());
}

}  // namespace

// Each round runs the spread sizes and then, as the reference, the same number of
// 256-byte messages (the form of session/producer-consumer).
void session_producer_consumer_sizes(const run_settings& settings, recorder& out) {
  const int messages = settings.full ? 2'000'000 : 300'000;
  const std::vector<std::uint32_t> spread = spread_sizes(messages);
  const std::vector<std::uint32_t> single(spread.size(), 256);
  run_rounds(settings, [&](bool measured) {
    const double spread_ns = producer_consumer_ns(spread);
    const double single_ns = producer_consumer_ns(single);
    if (!measured) return;
    out.add("64 B-1 KiB, uniform", "ns/block", spread_ns);
    out.add("256 B only", "ns/block", single_ns);
  });
}

}  // namespace strata_bench
