// The tracking adaptor's sampled mode (tracking_options{.sample_bytes = N}):
// exact counters, records of the drawn blocks only, forgotten on free, and
// weights whose sums estimate what is live; frees it does not record reach the
// upstream unchecked. Every run uses a fixed seed, so the draws are the same.
#include <strata/tracking.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// Hands out addresses it never maps, so a test may "allocate" gigabytes: the
// adaptor never touches a block. Counts what it is given back.
struct address_only {
  std::uintptr_t next = 1 << 20;
  std::size_t frees = 0;
  // A fresh, aligned address range of `bytes`.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    next = (next + alignment - 1) & ~(alignment - 1);
    const std::uintptr_t p = next;
    next += bytes == 0 ? 1 : bytes;
    return reinterpret_cast<void*>(p);
  }
  // Nothing to give back; only counted.
  void deallocate(void*, std::size_t, std::size_t) { ++frees; }
  bool is_equal(const address_only& other) const noexcept { return this == &other; }
};

using sampled = strata::tracking<address_only, true>;
constexpr std::uint64_t seed = 2026;

static_assert(strata::host_resource<sampled>);

TEST(TrackingSampled, CountersStayExactAndRecordsAreLiveBlocks) {
  sampled resource(strata::tracking_options{.sample_bytes = 256 * 1024, .seed = seed});
  std::map<std::uintptr_t, std::size_t> shadow;
  std::vector<std::uintptr_t> order;
  std::mt19937_64 random(11);
  std::size_t live_bytes = 0, total_bytes = 0, total_blocks = 0;
  for (int step = 0; step < 20000; ++step) {
    if (!order.empty() && random() % 5 < 2) {
      const std::size_t at = random() % order.size();
      const std::uintptr_t p = order[at];
      order[at] = order.back();
      order.pop_back();
      resource.deallocate(reinterpret_cast<void*>(p), shadow.at(p), 16);
      live_bytes -= shadow.at(p);
      shadow.erase(p);
    } else {
      const std::size_t bytes = random() % 3 == 0 ? random() % 65536 : 16 + random() % 512;
      const auto p = reinterpret_cast<std::uintptr_t>(resource.allocate(bytes, 16));
      shadow[p] = bytes;
      order.push_back(p);
      live_bytes += bytes;
      total_bytes += bytes;
      ++total_blocks;
    }
    if (step % 1000 != 0) continue;
    ASSERT_EQ(resource.live_blocks(), shadow.size()) << step;
    ASSERT_EQ(resource.live_bytes(), live_bytes) << step;
    ASSERT_EQ(resource.total_allocations(), total_blocks) << step;
    ASSERT_EQ(resource.total_bytes(), total_bytes) << step;
    // Every record is a live block of its size: a freed sample leaves no record.
    for (const auto& b : resource.live()) {
      ASSERT_EQ(shadow.count(b.address), 1u) << step;
      ASSERT_EQ(shadow.at(b.address), b.bytes) << step;
      ASSERT_GE(b.weight, 1.0);
    }
  }
  EXPECT_GT(resource.live().size(), 0u);
  EXPECT_LT(resource.live().size(), shadow.size() / 4);  // a sample, not everything
  for (const auto& [p, bytes] : shadow) resource.deallocate(reinterpret_cast<void*>(p), bytes, 16);
  EXPECT_EQ(resource.live_blocks(), 0u);
  EXPECT_EQ(resource.live_bytes(), 0u);
  EXPECT_TRUE(resource.live().empty());
  EXPECT_EQ(resource.upstream().frees, total_blocks);
}

TEST(TrackingSampled, WeightsEstimateEachTagsLiveBytes) {
  // Three sites of known sizes and counts, one tag each; what each still
  // holds is estimated from its records' weights within 10% (the small and
  // medium sites draw over 1,000 samples each, so 10% is over 3 standard
  // errors; nearly every large block is drawn).
  sampled resource(strata::tracking_options{.sample_bytes = 64 * 1024, .seed = seed});
  struct site {
    const char* tag;
    std::size_t bytes;
    std::size_t count;
  };
  const site sites[] = {{"small", 256, 800000}, {"medium", 16384, 20000}, {"large", 1 << 20, 300}};
  std::vector<std::pair<void*, std::size_t>> freed_later;
  for (int round = 0; round < 2; ++round)
    for (const site& s : sites)
      for (std::size_t i = 0; i < s.count / 2; ++i) {
        void* p = resource.allocate_tagged(s.bytes, 16, s.tag);
        if (round == 1) freed_later.emplace_back(p, s.bytes);  // half of each site freed
      }
  for (auto [p, bytes] : freed_later) resource.deallocate(p, bytes, 16);
  std::map<std::string, double> estimated;
  double estimated_blocks = 0;
  for (const auto& b : resource.live()) {
    estimated[b.tag] += b.weight * static_cast<double>(b.bytes);
    estimated_blocks += b.weight;
  }
  double live_bytes = 0;
  for (const site& s : sites) {
    const double truth = static_cast<double>(s.bytes * (s.count / 2));
    live_bytes += truth;
    EXPECT_NEAR(estimated[s.tag], truth, truth * 0.10) << s.tag;
  }
  EXPECT_EQ(resource.live_bytes(), static_cast<std::size_t>(live_bytes));
  const double blocks = static_cast<double>(resource.live_blocks());
  EXPECT_NEAR(estimated_blocks, blocks, blocks * 0.10);
  const std::string report = resource.leak_report();
  EXPECT_NE(report.find("sampled 1 per 65536 bytes"), std::string::npos) << report.substr(0, 200);
  EXPECT_NE(report.find(" weight "), std::string::npos);
}

TEST(TrackingSampled, EveryBlockIsDrawnAtOneByteAndForgottenOnFree) {
  // At a mean of 1 byte every block of 64 bytes or more is drawn.
  strata::tracking<strata::malloc_resource, true, 8> resource(
      strata::tracking_options{.sample_bytes = 1, .seed = seed});
  std::vector<void*> blocks;
  {
    strata::tracking_tag tag("parser");
    for (std::size_t i = 0; i < 100; ++i) blocks.push_back(resource.allocate(64 + i));
  }
  for (std::size_t i = 0; i < 100; i += 2) resource.deallocate(blocks[i], 64 + i);
  const auto live = resource.live();
  ASSERT_EQ(live.size(), 50u);
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i].address, reinterpret_cast<std::uintptr_t>(blocks[2 * i + 1]));
    EXPECT_EQ(live[i].bytes, 2 * i + 65);
    EXPECT_STREQ(live[i].tag, "parser");
    EXPECT_NEAR(live[i].weight, 1.0, 1e-9);
    EXPECT_GT(live[i].depth, 0u);
  }
  for (std::size_t i = 1; i < 100; i += 2) resource.deallocate(blocks[i], 64 + i);
  EXPECT_TRUE(resource.live().empty());
  EXPECT_EQ(resource.live_bytes(), 0u);
}

TEST(TrackingSampled, OneThreadVariantSamplesTheSame) {
  strata::tracking<address_only, true, 0, strata::no_lock> resource(
      strata::tracking_options{.sample_bytes = 1, .seed = seed});
  void* a = resource.allocate(100, 16);
  void* b = resource.allocate(200, 16);
  resource.deallocate(a, 100, 16);
  ASSERT_EQ(resource.live().size(), 1u);
  EXPECT_EQ(resource.live()[0].address, reinterpret_cast<std::uintptr_t>(b));
  EXPECT_EQ(resource.live_bytes(), 200u);
  resource.deallocate(b, 200, 16);
  EXPECT_TRUE(resource.live().empty());
  EXPECT_EQ(resource.total_bytes(), 300u);
}

TEST(TrackingSampled, TheSameSeedDrawsTheSameBlocks) {
  // Two adaptors over address-only upstreams that hand out the same addresses.
  const auto draws = [](std::uint64_t s) {
    sampled resource(strata::tracking_options{.sample_bytes = 4096, .seed = s});
    for (std::size_t i = 0; i < 5000; ++i) resource.allocate(16 + i % 700, 16);
    std::vector<std::uintptr_t> drawn;
    for (const auto& b : resource.live()) drawn.push_back(b.address);
    return drawn;
  };
  EXPECT_EQ(draws(seed), draws(seed));
  EXPECT_NE(draws(seed), draws(seed + 1));
}

TEST(TrackingSampled, FreesOnOtherThreadsKeepTheCountsAndForgetTheRecords) {
  strata::tracking<strata::malloc_resource, true> resource(
      strata::tracking_options{.sample_bytes = 2048, .seed = seed});
  constexpr int threads = 4, rounds = 3000;
  std::vector<std::vector<void*>> kept(threads);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) kept[t].push_back(resource.allocate(64 + i % 1000));
    });
  for (auto& t : team) t.join();
  team.clear();
  EXPECT_EQ(resource.live_blocks(), static_cast<std::size_t>(threads * rounds));
  EXPECT_FALSE(resource.live().empty());
  // Each thread frees its neighbour's blocks.
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      const int owner = (t + 1) % threads;
      for (int i = 0; i < rounds; ++i) resource.deallocate(kept[owner][i], 64 + i % 1000);
    });
  for (auto& t : team) t.join();
  EXPECT_EQ(resource.live_blocks(), 0u);
  EXPECT_EQ(resource.live_bytes(), 0u);
  EXPECT_EQ(resource.total_allocations(), static_cast<std::uint64_t>(threads * rounds));
  EXPECT_TRUE(resource.live().empty());
}

// Throws on a free of an address it does not hold live, as a device pool does.
struct refusing {
  address_only addresses;
  std::set<void*> live;
  // A fresh address range, held live.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    void* p = addresses.allocate(bytes, alignment);
    live.insert(p);
    return p;
  }
  // Refuses a block it does not hold live.
  void deallocate(void* p, std::size_t, std::size_t) {
    if (live.erase(p) == 0) throw std::invalid_argument("not live");
  }
  bool is_equal(const refusing& other) const noexcept { return this == &other; }
};

// A double free the upstream refuses (throws) counts nothing: the counters
// still say what is live. Drawn and never-drawn blocks alike.
TEST(TrackingSampled, AFreeTheUpstreamRefusesCountsNothing) {
  for (std::size_t mean : {std::size_t{1}, std::size_t{1} << 40}) {
    strata::tracking<refusing, true> resource(
        strata::tracking_options{.sample_bytes = mean, .seed = seed});
    void* kept = resource.allocate(100, 16);
    void* freed = resource.allocate(200, 16);
    resource.deallocate(freed, 200, 16);
    EXPECT_THROW(resource.deallocate(freed, 200, 16), std::invalid_argument);
    EXPECT_EQ(resource.live_blocks(), 1u);
    EXPECT_EQ(resource.live_bytes(), 100u);
    EXPECT_EQ(resource.live().size(), mean == 1 ? 1u : 0u);
    resource.deallocate(kept, 100, 16);
    EXPECT_EQ(resource.live_blocks(), 0u);
    EXPECT_EQ(resource.live_bytes(), 0u);
    EXPECT_TRUE(resource.live().empty());
  }
}

TEST(TrackingSampled, AFreeItNeverRecordedReachesTheUpstream) {
  // Not drawn (a mean of 1 TiB): no record, so a free of a block the adaptor
  // never handed out is the upstream's to judge, not the adaptor's.
  sampled resource(strata::tracking_options{.sample_bytes = std::size_t{1} << 40, .seed = seed});
  void* p = resource.allocate(64, 16);
  EXPECT_TRUE(resource.live().empty());
  resource.deallocate(p, 64, 16);
  resource.deallocate(reinterpret_cast<void*>(std::uintptr_t{64}), 64, 16);
  EXPECT_EQ(resource.upstream().frees, 2u);
  EXPECT_EQ(resource.sample_bytes(), std::size_t{1} << 40);
}

TEST(TrackingSampled, ExactModeIsTheDefaultAndCountsTotals) {
  strata::tracking<address_only, true> exact;
  EXPECT_EQ(exact.sample_bytes(), 0u);
  void* a = exact.allocate(100, 16);
  exact.deallocate(exact.allocate(50, 16), 50, 16);
  EXPECT_EQ(exact.live().size(), 1u);
  EXPECT_DOUBLE_EQ(exact.live()[0].weight, 1.0);
  EXPECT_EQ(exact.total_allocations(), 2u);
  EXPECT_EQ(exact.total_bytes(), 150u);
  exact.deallocate(a, 100, 16);
  // The off switch takes the options too, and ignores them.
  strata::tracking<address_only, false> off(strata::tracking_options{.sample_bytes = 64});
  off.deallocate(off.allocate(8, 8), 8, 8);
  EXPECT_EQ(off.live_blocks(), 0u);
}

}  // namespace
