// The tracking adaptor: live blocks with their tags, sizes and stacks, the leak
// report, and the off switch that leaves only the upstream.
#include <strata/tracking.hpp>

#include <strata/synchronized.hpp>

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using tracked = strata::tracking<strata::malloc_resource, true>;

// An upstream with state, to show the off switch adds nothing to it.
struct sized_upstream {
  strata::malloc_resource inner;
  long state = 0;
  // Forward to malloc.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return inner.allocate(bytes, alignment);
  }
  // Forward to free.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    inner.deallocate(p, bytes, alignment);
  }
  bool is_equal(const sized_upstream&) const noexcept { return true; }
};

static_assert(strata::host_resource<tracked>);
static_assert(sizeof(strata::tracking<sized_upstream, false>) == sizeof(sized_upstream));
static_assert(std::is_empty_v<strata::tracking<strata::heap_resource, false>> ==
              std::is_empty_v<strata::heap_resource>);
static_assert(!strata::tracking<strata::malloc_resource, false>::enabled);
static_assert(strata::tracking_by_default);

TEST(Tracking, ListsExactlyTheLiveBlocks) {
  tracked resource;
  void* a = resource.allocate(100);
  void* b;
  {
    strata::tracking_tag tag("parser");
    b = resource.allocate(2000, 64);
    {
      strata::tracking_tag inner("lexer");
      resource.deallocate(resource.allocate(7), 7);
    }
  }
  void* c = resource.allocate_tagged(30, 16, "cache");
  resource.deallocate(a, 100);
  EXPECT_EQ(resource.live_blocks(), 2u);
  EXPECT_EQ(resource.live_bytes(), 2030u);
  const auto live = resource.live();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].address, reinterpret_cast<std::uintptr_t>(b));
  EXPECT_EQ(live[0].bytes, 2000u);
  EXPECT_EQ(live[0].alignment, 64u);
  EXPECT_STREQ(live[0].tag, "parser");
  EXPECT_EQ(live[0].thread, strata::thread_number());
  EXPECT_STREQ(live[1].tag, "cache");
  EXPECT_LE(live[0].time_ns, live[1].time_ns);

  const std::string report = resource.leak_report();
  EXPECT_NE(report.find("2 live blocks, 2030 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find("2000 bytes align 64"), std::string::npos) << report;
  EXPECT_NE(report.find("tag parser"), std::string::npos) << report;
  EXPECT_NE(report.find("tag cache"), std::string::npos) << report;
  EXPECT_EQ(report.find("lexer"), std::string::npos) << report;
  EXPECT_EQ(report.find("100 bytes"), std::string::npos) << report;
  resource.deallocate(b, 2000, 64);
  resource.deallocate(c, 30, 16);
  EXPECT_NE(resource.leak_report().find("0 live blocks, 0 bytes"), std::string::npos);
}

TEST(Tracking, RecordsTheAllocatingThread) {
  tracked resource;
  void* p = nullptr;
  std::uint32_t number = 0;
  std::thread([&] {
    p = resource.allocate(48);
    number = strata::thread_number();
  }).join();
  ASSERT_EQ(resource.live().size(), 1u);
  EXPECT_EQ(resource.live()[0].thread, number);
  EXPECT_NE(number, strata::thread_number());
  resource.deallocate(p, 48);
}

// Not inlined, so its name is a frame of the captured stack.
[[gnu::noinline]] void* allocate_here(strata::tracking<strata::malloc_resource, true, 8>& r) {
  void* p = r.allocate(256);
  asm volatile("" ::: "memory");
  return p;
}

TEST(Tracking, CapturesStacks) {
  strata::tracking<strata::malloc_resource, true, 8> resource;
  void* p = allocate_here(resource);
  const auto live = resource.live();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_GT(live[0].depth, 0u);
  EXPECT_LE(live[0].depth, 8u);
  const std::string report = resource.leak_report();
  EXPECT_NE(report.find("    #0 0x"), std::string::npos) << report;
  resource.deallocate(p, 256);
}

TEST(Tracking, OffSwitchIsAPassThrough) {
  strata::tracking<sized_upstream, false> resource;
  void* p = resource.allocate_tagged(64, 16, "ignored");
  EXPECT_EQ(resource.live_blocks(), 0u);
  EXPECT_EQ(resource.leak_report(), "strata tracking: compiled out\n");
  resource.deallocate(p, 64);
}

TEST(Tracking, ZeroBytesIsValidAndBadAlignmentThrows) {
  strata::tracking<strata::heap_resource, true> resource;
  void* p = resource.allocate(0);
  EXPECT_EQ(resource.live_blocks(), 1u);
  resource.deallocate(p, 0);
  EXPECT_THROW(resource.allocate(8, 12), std::invalid_argument);
  EXPECT_EQ(resource.live_blocks(), 0u);
}

TEST(TrackingDeathTest, FreeOfAnUnknownBlockIsReported) {
  strata::tracking<strata::heap_resource, true> resource;
  static char foreign[32];
  EXPECT_DEATH(resource.deallocate(foreign, 32), "not live in this tracking adaptor");
}

}  // namespace

namespace {

TEST(AddressTable, MatchesAShadowMapUnderRandomInsertsAndErases) {
  strata::address_table<std::size_t> table(16);
  std::unordered_map<std::uintptr_t, std::size_t> shadow;
  std::mt19937_64 random(7);
  for (int step = 0; step < 200000; ++step) {
    const std::uintptr_t key = 16 * (1 + random() % 4096);
    if (random() % 2 == 0) {
      table.insert(key, step);
      shadow[key] = static_cast<std::size_t>(step);
    } else {
      std::size_t value = 0;
      const bool found = table.erase(key, &value);
      ASSERT_EQ(found, shadow.count(key) == 1) << step;
      if (found) {
        ASSERT_EQ(value, shadow[key]);
        shadow.erase(key);
      }
    }
    ASSERT_EQ(table.size(), shadow.size());
  }
  std::size_t seen = 0;
  table.for_each([&](std::uintptr_t key, std::size_t value) {
    ++seen;
    EXPECT_EQ(shadow.at(key), value);
  });
  EXPECT_EQ(seen, shadow.size());
}

TEST(Tracking, OneThreadVariantTracksTheSame) {
  strata::tracking<strata::malloc_resource, true, 0, strata::no_lock> resource;
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < 5000; ++i) blocks.push_back(resource.allocate(i + 1));
  for (std::size_t i = 0; i < 5000; i += 2) resource.deallocate(blocks[i], i + 1);
  EXPECT_EQ(resource.live_blocks(), 2500u);
  const auto live = resource.live();
  ASSERT_EQ(live.size(), 2500u);
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i].address,
              reinterpret_cast<std::uintptr_t>(blocks[2 * i + 1]));  // oldest first
    EXPECT_EQ(live[i].bytes, 2 * i + 2);
  }
  for (std::size_t i = 1; i < 5000; i += 2) resource.deallocate(blocks[i], i + 1);
  EXPECT_EQ(resource.live_bytes(), 0u);
}

}  // namespace

namespace {

TEST(Tracking, ABlockFreedOnAnotherThreadIsForgotten) {
  tracked resource;
  void* p = resource.allocate(64);
  void* q = nullptr;
  std::thread([&] {
    resource.deallocate(p, 64);  // recorded by the main thread's shard
    q = resource.allocate(32);
  }).join();
  EXPECT_EQ(resource.live_blocks(), 1u);
  EXPECT_EQ(resource.live_bytes(), 32u);
  resource.deallocate(q, 32);  // recorded by the exited thread's shard
  EXPECT_EQ(resource.live_blocks(), 0u);
  EXPECT_EQ(resource.live_bytes(), 0u);
}

TEST(Tracking, RecordsOutliveTheThreadThatMadeThem) {
  tracked resource;
  std::vector<void*> blocks(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < blocks.size(); ++t)
    threads.emplace_back([&, t] {
      strata::tracking_tag tag("worker");
      blocks[t] = resource.allocate(100 + t);
    });
  for (auto& t : threads) t.join();
  // A new thread adopts an exited thread's shard; the records there stay live.
  void* late = nullptr;
  std::thread([&] { late = resource.allocate_tagged(7, 8, "late"); }).join();
  const std::string report = resource.leak_report();
  EXPECT_NE(report.find("9 live blocks, 835 bytes"), std::string::npos) << report;
  for (std::size_t t = 0; t < blocks.size(); ++t) {
    char line[64];
    std::snprintf(line, sizeof line, "0x%" PRIxPTR " %zu bytes",
                  reinterpret_cast<std::uintptr_t>(blocks[t]), 100 + t);
    EXPECT_NE(report.find(line), std::string::npos) << report;
  }
  EXPECT_NE(report.find("tag late"), std::string::npos) << report;
  for (std::size_t t = 0; t < blocks.size(); ++t) resource.deallocate(blocks[t], 100 + t);
  resource.deallocate(late, 7, 8);
  EXPECT_EQ(resource.live_blocks(), 0u);
}

TEST(Tracking, ThreadsShareOneAdaptorExactly) {
  tracked resource;
  constexpr int threads = 4, rounds = 2000;
  // Each thread frees its neighbour's blocks half the time, so records cross shards.
  std::vector<std::vector<void*>> kept(threads);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<unsigned>(t));
      for (int i = 0; i < rounds; ++i)
        kept[t].push_back(resource.allocate(16 + random() % 200, 16));
    });
  for (auto& t : team) t.join();
  EXPECT_EQ(resource.live_blocks(), static_cast<std::size_t>(threads * rounds));
  team.clear();
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<unsigned>(t));
      for (int i = 0; i < rounds; ++i) {
        const std::size_t bytes = 16 + random() % 200;
        if (i % 2 == 0) resource.deallocate(kept[t][i], bytes, 16);
      }
    });
  for (auto& t : team) t.join();
  team.clear();
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      const int owner = (t + 1) % threads;
      std::mt19937_64 random(static_cast<unsigned>(owner));
      for (int i = 0; i < rounds; ++i) {
        const std::size_t bytes = 16 + random() % 200;
        if (i % 2 == 1) resource.deallocate(kept[owner][i], bytes, 16);
      }
    });
  for (auto& t : team) t.join();
  EXPECT_EQ(resource.live_blocks(), 0u);
  EXPECT_EQ(resource.live_bytes(), 0u);
}

TEST(Tracking, FreeOfNullIsIgnored) {
  tracked resource;
  resource.deallocate(nullptr, 16);
  EXPECT_EQ(resource.live_blocks(), 0u);
}

TEST(TrackingDeathTest, DoubleFreeIsReportedBeforeTheUpstreamSeesIt) {
  tracked resource;
  void* p = resource.allocate(24);
  resource.deallocate(p, 24);
  EXPECT_DEATH(resource.deallocate(p, 24), "not live in this tracking adaptor");
}

TEST(TrackingDeathTest, DoubleFreeOnAnotherThreadIsReported) {
  EXPECT_DEATH(
      {
        tracked resource;
        void* p = resource.allocate(24);
        resource.deallocate(p, 24);
        std::thread([&] { resource.deallocate(p, 24); }).join();
      },
      "not live in this tracking adaptor");
}

}  // namespace

namespace {

TEST(Tracking, LeakReportIsCompleteAfterFreesOfTheNewestAndTheOldest) {
  // Every count up to and past the table's first growth, freeing the newest
  // and the oldest block, lists every live block, oldest first.
  for (std::size_t count = 1; count <= 40; ++count) {
    tracked resource;
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < count; ++i) blocks.push_back(resource.allocate(i + 1));
    resource.deallocate(blocks.back(), count);  // from the batch
    if (count > 1) resource.deallocate(blocks.front(), 1);
    const auto live = resource.live();
    const std::size_t expected = count > 1 ? count - 2 : 0;
    ASSERT_EQ(live.size(), expected) << count;
    ASSERT_EQ(resource.live_blocks(), expected) << count;
    for (std::size_t i = 0; i < expected; ++i) {
      EXPECT_EQ(live[i].address, reinterpret_cast<std::uintptr_t>(blocks[i + 1])) << count;
      EXPECT_EQ(live[i].bytes, i + 2) << count;
    }
    for (std::size_t i = 1; i + 1 < count; ++i) resource.deallocate(blocks[i], i + 1);
    EXPECT_EQ(resource.live_bytes(), 0u) << count;
  }
}

}  // namespace

namespace {

// Frees its block, and makes and frees one through a second adaptor, when its
// thread exits: after the thread's list of shards is gone.
struct uses_tracking_at_exit {
  tracked* first = nullptr;
  tracked* second = nullptr;
  void* block = nullptr;
  ~uses_tracking_at_exit() {
    if (first == nullptr) return;
    first->deallocate(block, 40);
    second->deallocate(second->allocate(8), 8);
    second->allocate_tagged(16, 16, "at exit");  // left live on purpose
  }
};

TEST(Tracking, ThreadLocalDestructorsMayStillUseTheAdaptor) {
  tracked first, second;
  std::thread([&] {
    // Made before the thread's first tracking call, so destroyed after its shards.
    static thread_local uses_tracking_at_exit user;
    user.first = &first;
    user.second = &second;
    user.block = first.allocate(40);
  }).join();
  EXPECT_EQ(first.live_blocks(), 0u);
  ASSERT_EQ(second.live().size(), 1u);
  EXPECT_STREQ(second.live()[0].tag, "at exit");
  second.deallocate(reinterpret_cast<void*>(second.live()[0].address), 16, 16);
  EXPECT_EQ(second.live_bytes(), 0u);
}

}  // namespace
