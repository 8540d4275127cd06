// The GPU tracking adaptor's sampled mode (tracking_options after the device)
// on the strict simulated device: exact counters against a shadow model, records
// of drawn device blocks only, forgotten at the free call however the free is
// ordered, weights that estimate each tag's live bytes, and frees it holds no
// record of answered by the upstream. Every run uses a fixed seed.
#include "gate.hpp"

#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/gpu/tracking.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::uint64_t seed = 2026;
using sampled_pool = tracking<device_pool>;

// An address-only simulated device of 4 GiB: no host memory behind the blocks,
// which the adaptor never touches anyway.
simulated_config address_only_device() {
  simulated_config config;
  config.capacity = std::size_t{4} << 30;
  config.backing = memory_backing::address_only;
  return config;
}

// Whether `f` throws the upstream's device_error(invalid_argument).
template <class F>
bool refused_by_upstream(F&& f) {
  try {
    f();
  } catch (const device_error& e) {
    return e.code() == errc::invalid_argument;
  }
  return false;
}

TEST(gpu_tracking_sampled, CountersStayExactAgainstAShadowAcrossStreams) {
  simulated_device dev(address_only_device());
  sampled_pool pool(dev, tracking_options{.sample_bytes = 256 * kib, .seed = seed});
  EXPECT_EQ(pool.sample_bytes(), 256 * kib);
  const stream streams[] = {dev.create_stream(), dev.create_stream(), stream{}};
  std::map<std::uintptr_t, std::size_t> shadow;
  std::vector<std::uintptr_t> order;
  std::mt19937_64 random(11);
  std::size_t live_bytes = 0, total_bytes = 0, total_blocks = 0;
  for (int step = 0; step < 20000; ++step) {
    const stream s = streams[random() % 3];
    if (!order.empty() && random() % 5 < 2) {
      const std::size_t at = random() % order.size();
      const std::uintptr_t p = order[at];
      order[at] = order.back();
      order.pop_back();
      if (random() % 4 == 0)
        pool.deallocate_sync(reinterpret_cast<void*>(p), shadow.at(p));
      else
        pool.deallocate(reinterpret_cast<void*>(p), shadow.at(p), s);
      live_bytes -= shadow.at(p);
      shadow.erase(p);
    } else {
      const std::size_t bytes = random() % 3 == 0 ? 1 + random() % 65536 : 16 + random() % 512;
      const auto p = reinterpret_cast<std::uintptr_t>(pool.allocate(bytes, s));
      shadow[p] = bytes;
      order.push_back(p);
      live_bytes += bytes;
      total_bytes += bytes;
      ++total_blocks;
    }
    if (step % 1000 != 0) continue;
    ASSERT_EQ(pool.live_blocks(), shadow.size()) << step;
    ASSERT_EQ(pool.live_bytes(), live_bytes) << step;
    ASSERT_EQ(pool.total_allocations(), total_blocks) << step;
    ASSERT_EQ(pool.total_bytes(), total_bytes) << step;
    // Every record is a live block of its size: a freed sample leaves no record.
    for (const auto& b : pool.records().live()) {
      ASSERT_EQ(shadow.count(b.address), 1u) << step;
      ASSERT_EQ(shadow.at(b.address), b.bytes) << step;
      ASSERT_GE(b.weight, 1.0);
    }
  }
  const std::size_t records = pool.records().live().size();
  EXPECT_GT(records, 0u);
  EXPECT_LT(records, shadow.size() / 4);  // a sample, not everything
  for (const auto& [p, bytes] : shadow)
    pool.deallocate(reinterpret_cast<void*>(p), bytes, stream{});
  EXPECT_EQ(pool.live_blocks(), 0u);
  EXPECT_EQ(pool.live_bytes(), 0u);
  EXPECT_TRUE(pool.records().live().empty());
  const device_pool_statistics held = pool.upstream().statistics();
  EXPECT_EQ(held.blocks.chunks_in_use, held.pending_blocks);  // every block back in the pool
  dev.destroy_stream(streams[0]);
  dev.destroy_stream(streams[1]);
}

TEST(gpu_tracking_sampled, WeightsEstimateEachTagsLiveBytes) {
  // Three tagged sites of known sizes and counts, half of each freed; what each
  // still holds is estimated from its records' weights within 10% (the small
  // and medium sites keep over 1,000 live samples each, so 10% is over 3
  // standard errors; nearly every large block is drawn).
  simulated_device dev(address_only_device());
  sampled_pool pool(dev, tracking_options{.sample_bytes = 16 * kib, .seed = seed});
  const stream s = dev.create_stream();
  struct site {
    const char* tag;
    std::size_t bytes;
    std::size_t count;
  };
  const site sites[] = {
      {"small", 256, 200000}, {"medium", 8 * kib, 8000}, {"large", kib * kib, 100}};
  std::vector<std::pair<void*, std::size_t>> freed_later;
  for (int round = 0; round < 2; ++round)
    for (const site& each : sites) {
      tracking_tag tag(each.tag);
      for (std::size_t i = 0; i < each.count / 2; ++i) {
        void* p = pool.allocate(each.bytes, s);
        if (round == 1) freed_later.emplace_back(p, each.bytes);
      }
    }
  for (auto [p, bytes] : freed_later) pool.deallocate(p, bytes, s);
  std::map<std::string, double> estimated;
  double estimated_blocks = 0;
  for (const auto& b : pool.records().live()) {
    estimated[b.tag] += b.weight * static_cast<double>(b.bytes);
    estimated_blocks += b.weight;
  }
  double live_bytes = 0;
  for (const site& each : sites) {
    const double truth = static_cast<double>(each.bytes * (each.count / 2));
    live_bytes += truth;
    EXPECT_NEAR(estimated[each.tag], truth, truth * 0.10) << each.tag;
  }
  EXPECT_EQ(pool.live_bytes(), static_cast<std::size_t>(live_bytes));
  const double blocks = static_cast<double>(pool.live_blocks());
  EXPECT_NEAR(estimated_blocks, blocks, blocks * 0.10);
  const std::string report = pool.leak_report();
  EXPECT_NE(report.find("sampled 1 per 16384 bytes"), std::string::npos) << report.substr(0, 200);
  EXPECT_NE(report.find(" weight "), std::string::npos);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking_sampled, EveryBlockIsDrawnAtOneByteAndForgottenOnFree) {
  // At a mean of 1 byte every block of 256 bytes or more is drawn, weight 1.
  simulated_device dev;
  sampled_pool pool(dev, tracking_options{.sample_bytes = 1, .seed = seed});
  const stream s = dev.create_stream();
  std::vector<void*> blocks;
  for (std::size_t i = 1; i <= 32; ++i) blocks.push_back(pool.allocate(256 * i, s));
  const auto live = pool.records().live();
  ASSERT_EQ(live.size(), blocks.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i].address, reinterpret_cast<std::uintptr_t>(blocks[i]));
    EXPECT_EQ(live[i].bytes, 256 * (i + 1));
    EXPECT_DOUBLE_EQ(live[i].weight, 1.0);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 2) pool.deallocate(blocks[i], 256 * (i + 1), s);
  const auto left = pool.records().live();
  ASSERT_EQ(left.size(), blocks.size() / 2);
  for (std::size_t i = 0; i < left.size(); ++i)
    EXPECT_EQ(left[i].address, reinterpret_cast<std::uintptr_t>(blocks[2 * i + 1]));
  for (std::size_t i = 1; i < blocks.size(); i += 2) pool.deallocate(blocks[i], 256 * (i + 1), s);
  EXPECT_TRUE(pool.records().live().empty());
  EXPECT_EQ(pool.live_blocks(), 0u);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking_sampled, AStreamOrderedFreeForgetsTheRecordAtTheCall) {
  simulated_device dev;
  sampled_pool pool(dev, tracking_options{.sample_bytes = 1, .seed = seed});
  const stream s = dev.create_stream();
  gate held;
  dev.launch_host(s, held.closed());
  void* first = pool.allocate(4 * kib, s);
  // The record goes at the call; the block waits in the pool behind s's work,
  // and s itself may take it again at once, recorded afresh.
  pool.deallocate(first, 4 * kib, s);
  EXPECT_TRUE(pool.records().live().empty());
  EXPECT_EQ(pool.upstream().statistics().pending_blocks, 1u);
  EXPECT_EQ(pool.allocate(4 * kib, s), first);
  ASSERT_EQ(pool.records().live().size(), 1u);
  EXPECT_EQ(pool.records().live().front().address, reinterpret_cast<std::uintptr_t>(first));
  held.open();
  pool.deallocate(first, 4 * kib, s);
  EXPECT_EQ(pool.live_blocks(), 0u);
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking_sampled, FreesOnOtherThreadsKeepTheCountsAndForgetTheRecords) {
  simulated_device dev(address_only_device());
  sampled_pool pool(dev, tracking_options{.sample_bytes = 4 * kib, .seed = seed});
  const stream s = dev.create_stream();
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) blocks.push_back(pool.allocate(kib, s));
  EXPECT_FALSE(pool.records().live().empty());
  std::thread other([&] {
    for (void* p : blocks) pool.deallocate(p, kib, s);
  });
  other.join();
  EXPECT_EQ(pool.live_blocks(), 0u);
  EXPECT_EQ(pool.live_bytes(), 0u);
  EXPECT_EQ(pool.total_allocations(), 2000u);
  EXPECT_TRUE(pool.records().live().empty());
  dev.synchronize(s);
  dev.destroy_stream(s);
}

TEST(gpu_tracking_sampled, AFreeItHoldsNoRecordOfReachesTheUpstream) {
  simulated_device dev;
  // Never drawn (a mean gap of a terabyte): the double free is device_pool's to refuse.
  sampled_pool never(dev, tracking_options{.sample_bytes = std::size_t{1} << 40, .seed = seed});
  void* p = never.allocate(4 * kib, stream{});
  EXPECT_TRUE(never.records().live().empty());
  never.deallocate(p, 4 * kib, stream{});
  EXPECT_TRUE(refused_by_upstream([&] { never.deallocate(p, 4 * kib, stream{}); }));
  // Drawn: the first free took its record, so the second is the upstream's too.
  sampled_pool every(dev, tracking_options{.sample_bytes = 1, .seed = seed});
  void* q = every.allocate(4 * kib, stream{});
  EXPECT_EQ(every.records().live().size(), 1u);
  every.deallocate(q, 4 * kib, stream{});
  EXPECT_TRUE(refused_by_upstream([&] { every.deallocate(q, 4 * kib, stream{}); }));
  // Another adaptor's block: refused by this one's pool.
  void* theirs = never.allocate(4 * kib, stream{});
  EXPECT_TRUE(refused_by_upstream([&] { every.deallocate(theirs, 4 * kib, stream{}); }));
  // A refused free counts nothing: each adaptor's counters still say what is live.
  EXPECT_EQ(never.live_blocks(), 1u);
  EXPECT_EQ(never.live_bytes(), 4 * kib);
  EXPECT_EQ(every.live_blocks(), 0u);
  never.deallocate(theirs, 4 * kib, stream{});
  EXPECT_EQ(never.live_blocks(), 0u);
  dev.synchronize();
}

TEST(gpu_tracking_sampled, ExactIsTheDefaultAndOptionsPassBeforeTheUpstreamsArguments) {
  simulated_device dev;
  sampled_pool exact(dev);
  EXPECT_EQ(exact.sample_bytes(), 0u);
  device_pool_config config;
  config.reserve_bytes = 4 << 20;
  sampled_pool reserved(dev, tracking_options{.sample_bytes = 1, .seed = seed}, config);
  EXPECT_EQ(reserved.sample_bytes(), 1u);
  void* p = reserved.allocate(kib, stream{});
  EXPECT_EQ(reserved.records().live().size(), 1u);
  EXPECT_GE(reserved.upstream().statistics().blocks.bytes_reserved, std::size_t{4} << 20);
  reserved.deallocate(p, kib, stream{});
  // Compiled out, the options are accepted and ignored.
  tracking<device_pool, false> off(dev, tracking_options{.sample_bytes = 64});
  EXPECT_EQ(off.sample_bytes(), 0u);
}

}  // namespace
}  // namespace strata::gpu::testing
