// The CPU facade: backend selection by option and by STRATA_CPU_BACKEND, the
// fallback with a reason, statistics, and pressure callbacks at the threshold.
#include <strata/cpu_allocator.hpp>

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using strata::cpu_allocator;
using strata::cpu_backend;

// Allocate a mix of sizes and alignments, write each block, free them all.
void exercise(cpu_allocator& a) {
  for (std::size_t alignment = 1; alignment <= 4096; alignment *= 4) {
    for (std::size_t bytes : {0, 1, 100, 70000}) {
      void* p = a.allocate(bytes, alignment);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
      std::memset(p, 0x3c, bytes);
      a.deallocate(p, bytes, alignment);
    }
  }
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.statistics().allocations, 28u);  // 7 alignments x 4 sizes
  EXPECT_THROW(a.allocate(8, 3), std::invalid_argument);
}

TEST(CpuAllocator, LinkedInBackendsAlwaysLoad) {
  for (cpu_backend backend : {cpu_backend::strata, cpu_backend::libc}) {
    cpu_allocator a({backend});
    EXPECT_EQ(a.backend(), backend);
    EXPECT_EQ(a.fallback_reason(), nullptr);
    exercise(a);
  }
}

TEST(CpuAllocator, LoadableBackendsLoadOrFallBackWithAReason) {
  for (cpu_backend backend : {cpu_backend::mimalloc, cpu_backend::tbbmalloc}) {
    cpu_allocator a({backend});
    if (a.backend() == backend) {
      EXPECT_EQ(a.fallback_reason(), nullptr);
    } else {
      EXPECT_EQ(a.backend(), cpu_backend::strata);
      ASSERT_NE(a.fallback_reason(), nullptr);
      EXPECT_NE(std::string(a.fallback_reason()).find(strata::cpu_backend_name(backend)),
                std::string::npos);
      std::printf("%s not loadable here: %s\n", strata::cpu_backend_name(backend),
                  a.fallback_reason());
    }
    exercise(a);
  }
}

TEST(CpuAllocator, EnvironmentChoosesTheBackend) {
  ::setenv("STRATA_CPU_BACKEND", "libc", 1);
  EXPECT_EQ(cpu_allocator().backend(), cpu_backend::libc);
  ::setenv("STRATA_CPU_BACKEND", "no-such-allocator", 1);
  cpu_allocator unknown;
  EXPECT_EQ(unknown.backend(), cpu_backend::strata);
  EXPECT_NE(unknown.fallback_reason(), nullptr);
  ::unsetenv("STRATA_CPU_BACKEND");
  EXPECT_EQ(cpu_allocator().backend(), cpu_backend::strata);
}

TEST(CpuAllocator, BytesInUseThresholdFiresOnceWhenCrossedOnTheSlowPath) {
  cpu_allocator a({cpu_backend::strata, 4096});  // poll every 4 KiB allocated
  std::vector<strata::pressure_event> events;
  const std::size_t id = a.watch_bytes_in_use(
      64 * 1024, [&](const strata::pressure_event& e) { events.push_back(e); });
  std::vector<void*> blocks;
  for (int i = 0; i < 15; ++i) blocks.push_back(a.allocate(4096));
  EXPECT_TRUE(events.empty());  // 60 KiB: below
  blocks.push_back(a.allocate(4096));
  ASSERT_EQ(events.size(), 1u);  // 64 KiB: at the threshold
  EXPECT_EQ(events[0].threshold_id, id);
  EXPECT_EQ(events[0].value, 64u * 1024);
  EXPECT_EQ(events[0].source, strata::pressure_source::reading);
  for (int i = 0; i < 4; ++i) blocks.push_back(a.allocate(4096));
  EXPECT_EQ(events.size(), 1u);  // still above: edge-triggered
  auto stats = a.pressure().statistics();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].times_fired, 1u);
  EXPECT_EQ(stats[0].last_value, 80u * 1024);
  EXPECT_EQ(stats[0].fired_value, 64u * 1024);
  EXPECT_FALSE(stats[0].armed);
  for (void* p : blocks) a.deallocate(p, 4096);
  blocks.clear();
  EXPECT_EQ(a.poll(), 0u);  // below again: re-armed
  EXPECT_TRUE(a.pressure().statistics()[0].armed);
  for (int i = 0; i < 16; ++i) blocks.push_back(a.allocate(4096));
  EXPECT_EQ(events.size(), 2u);
  for (void* p : blocks) a.deallocate(p, 4096);
}

TEST(CpuAllocator, CallbackCanFreeMemory) {
  cpu_allocator a({cpu_backend::libc, 0});  // explicit polls only
  std::vector<void*> cache;
  for (int i = 0; i < 8; ++i) cache.push_back(a.allocate(1 << 16));
  a.watch_bytes_in_use(1 << 19, [&](const strata::pressure_event&) {
    for (void* p : cache) a.deallocate(p, 1 << 16);
    cache.clear();
  });
  EXPECT_EQ(a.poll(), 1u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.pressure().polls(), 1u);
}

TEST(CpuAllocator, RssAndCommittedThresholdsReadRealValues) {
  cpu_allocator a({cpu_backend::strata, 0});
  EXPECT_GT(strata::process_resident_bytes(), 0u);
  int rss_fired = 0, committed_fired = 0;
  a.pressure().add_threshold(strata::pressure_source::process_rss, 1,
                             [&](const strata::pressure_event& e) {
                               EXPECT_GT(e.value, 0u);
                               ++rss_fired;
                             });
  a.pressure().add_threshold(strata::pressure_source::heap_committed, SIZE_MAX,
                             [&](const strata::pressure_event&) { ++committed_fired; });
  void* p = a.allocate(1 << 20);
  std::memset(p, 1, 1 << 20);
  a.poll();
  EXPECT_EQ(rss_fired, 1);
  EXPECT_EQ(committed_fired, 0);
  const auto stats = a.pressure().statistics();
  EXPECT_GE(stats[1].last_value, std::size_t{1} << 20);
  a.deallocate(p, 1 << 20);
}

TEST(CpuAllocatorConcurrency, BackgroundThreadPolls) {
  cpu_allocator a({cpu_backend::strata, 0});
  std::atomic<int> fired{0};
  a.watch_bytes_in_use(1000, [&](const strata::pressure_event&) { ++fired; });
  void* p = a.allocate(4000);
  a.pressure().start(std::chrono::milliseconds(1));
  while (fired.load() == 0) std::this_thread::yield();
  a.pressure().stop();
  EXPECT_EQ(fired.load(), 1);
  EXPECT_GE(a.pressure().polls(), 1u);
  a.deallocate(p, 4000);
}

}  // namespace
