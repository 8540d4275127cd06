// Behaviour of the monotonic arena: bumping, growth, marks, retention, stats.
#include <strata/arena.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string>
#include <vector>

#include "counting_resource.hpp"

namespace {

using strata::arena_options;
using strata::malloc_resource;
using strata::monotonic_arena;
using strata::retention;
using strata::test::counting_resource;
using strata::test::upstream_counts;

constexpr strata::arena_config checked_config{.statistics = true, .checked = true};
using counted_arena = monotonic_arena<counting_resource, checked_config>;

arena_options small_chunks(std::size_t initial = 4096, std::size_t max = 1 << 20) {
  arena_options options;
  options.growth = {initial, 2, max};
  return options;
}

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

TEST(Arena, BlocksAreAlignedDisjointAndKeepTheirContents) {
  monotonic_arena<> arena(small_chunks());
  std::vector<std::pair<unsigned char*, std::size_t>> blocks;
  for (std::size_t i = 0; i < 2000; ++i) {
    std::size_t bytes = 1 + (i * 37) % 700;
    std::size_t alignment = std::size_t{1} << (i % 8);
    auto* p = static_cast<unsigned char*>(arena.allocate(bytes, alignment));
    ASSERT_TRUE(aligned(p, alignment));
    std::memset(p, static_cast<int>(i & 0xff), bytes);
    blocks.emplace_back(p, bytes);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i)
    for (std::size_t j = 0; j < blocks[i].second; ++j)
      ASSERT_EQ(blocks[i].first[j], static_cast<unsigned char>(i & 0xff));
}

TEST(Arena, ZeroBytesGivesDistinctBlocks) {
  monotonic_arena<> arena;
  void* a = arena.allocate(0);
  void* b = arena.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
}

// The fast path's one compare lets a block end exactly at the chunk's end; a
// zero-byte block still takes a byte, so a full chunk cannot give one.
TEST(Arena, ABlockFillingTheChunkExactlyComesFromIt) {
  monotonic_arena<> arena;
  auto* first = static_cast<char*>(arena.allocate(16, 16));
  const std::size_t left = arena.bytes_left_in_chunk();
  EXPECT_EQ(arena.allocate(left, 1), first + 16);
  EXPECT_EQ(arena.bytes_left_in_chunk(), 0u);
  EXPECT_EQ(arena.try_allocate(1, 1), nullptr);
  EXPECT_EQ(arena.try_allocate(0, 1), nullptr);
  auto next = reinterpret_cast<std::uintptr_t>(arena.allocate(0, 1));  // a new chunk
  auto chunk_start = reinterpret_cast<std::uintptr_t>(first);
  EXPECT_TRUE(next < chunk_start || next >= chunk_start + 16 + left);
}

TEST(Arena, AlignmentNotAPowerOfTwoThrowsInvalidArgument) {
  monotonic_arena<> arena;
  EXPECT_THROW((void)arena.allocate(16, 3), std::invalid_argument);
  EXPECT_THROW((void)arena.allocate(16, 0), std::invalid_argument);
  void* out[2];
  EXPECT_THROW(arena.allocate_batch(16, 2, out, 24), std::invalid_argument);
}

// An upstream that has nothing to give.
struct empty_resource {
  void* allocate(std::size_t, std::size_t) { throw std::bad_alloc(); }
  void deallocate(void*, std::size_t, std::size_t) {}
  bool is_equal(const empty_resource&) const { return true; }
};

TEST(Arena, UpstreamFailureAndImpossibleSizesThrowBadAlloc) {
  monotonic_arena<empty_resource> arena;
  EXPECT_THROW((void)arena.allocate(64, 16), std::bad_alloc);
  EXPECT_THROW((void)arena.allocate(SIZE_MAX - 8, 16), std::bad_alloc);
  monotonic_arena<> on_malloc;
  EXPECT_THROW((void)on_malloc.allocate(SIZE_MAX - 8, 16), std::bad_alloc);
}

TEST(Arena, BatchGivesSeparateAlignedBlocks) {
  monotonic_arena<> arena(small_chunks());
  std::vector<void*> blocks(1000);
  arena.allocate_batch(64, blocks.size(), blocks.data(), 64);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_TRUE(aligned(blocks[i], 64));
    std::memset(blocks[i], static_cast<int>(i), 64);
    if (i > 0) {
      ASSERT_GE(static_cast<char*>(blocks[i]) - static_cast<char*>(blocks[i - 1]), 64);
    }
  }
  for (std::size_t i = 0; i < blocks.size(); ++i)
    ASSERT_EQ(static_cast<unsigned char*>(blocks[i])[63], static_cast<unsigned char>(i));
  EXPECT_EQ(arena.stats().allocations, 1000u);
  EXPECT_EQ(arena.stats().bytes_used, 64000u);
}

TEST(Arena, BatchAndArraySizesThatOverflowThrow) {
  monotonic_arena<> arena;
  void* out[1];
  EXPECT_THROW(arena.allocate_batch(SIZE_MAX / 2, 4, out), std::bad_array_new_length);
  EXPECT_THROW((void)arena.allocate_array<double>(SIZE_MAX / 4), std::bad_array_new_length);
}

TEST(Arena, ChunksGrowByTheFactorUpToTheCap) {
  upstream_counts counts;
  counted_arena arena(small_chunks(4096, 16384), counting_resource(counts));
  for (int i = 0; i < 100; ++i) (void)arena.allocate(1000);
  // 4 + 8 + 16 + 16 + ... KiB: 100 KB in chunks of at most 16 KiB.
  EXPECT_GE(arena.bytes_reserved(), 100000u);
  EXPECT_LE(arena.bytes_reserved(), 100000u + 4096 + 8192 + 2 * 16384);
  EXPECT_EQ(counts.live_bytes, arena.bytes_reserved());
}

TEST(Arena, OversizeRequestTakesItsOwnChunkAndDoesNotInflateGrowth) {
  upstream_counts counts;
  counted_arena arena(small_chunks(4096, 1 << 20), counting_resource(counts));
  (void)arena.allocate(100);
  std::size_t before = arena.bytes_reserved();
  void* big = arena.allocate(10 << 20);
  std::memset(big, 1, 10 << 20);
  EXPECT_LT(arena.bytes_reserved() - before, (10u << 20) + 4096);
  // The current chunk still serves small requests: no new upstream call.
  std::size_t calls = counts.allocations;
  (void)arena.allocate(100);
  EXPECT_EQ(counts.allocations, calls);
  // The next normal chunk is the second of the policy, 8 KiB, not 20 MiB.
  while (counts.allocations == calls) (void)arena.allocate(1000);
  EXPECT_LT(arena.bytes_reserved() - before, (10u << 20) + 4096 + 8192);
}

TEST(Arena, RewindFreesBackToTheMarkAndRestoresStats) {
  upstream_counts counts;
  counted_arena arena(small_chunks(), counting_resource(counts));
  (void)arena.allocate(100);
  strata::arena_stats at_mark = arena.stats();
  strata::arena_mark m = arena.mark();
  void* first = arena.allocate(64);
  for (int i = 0; i < 100; ++i) (void)arena.allocate(1000);  // spills into new chunks
  arena.rewind(m);
  EXPECT_EQ(arena.stats().bytes_used, at_mark.bytes_used);
  EXPECT_EQ(arena.stats().allocations, at_mark.allocations);
  EXPECT_GE(arena.stats().peak_bytes_used, 100000u);
  EXPECT_EQ(arena.allocate(64), first);
  arena.rewind(m);  // a mark stays valid after a rewind to it
  EXPECT_EQ(arena.allocate(64), first);
  // The chunks taken after the mark are kept as spares, not re-requested.
  std::size_t calls = counts.allocations;
  for (int i = 0; i < 100; ++i) (void)arena.allocate(1000);
  EXPECT_EQ(counts.allocations, calls);
}

TEST(Arena, ScopedMarksNest) {
  monotonic_arena<malloc_resource, checked_config> arena(small_chunks());
  void* outer_first = nullptr;
  {
    auto outer = arena.scope();
    outer_first = arena.allocate(32);
    {
      auto inner = arena.scope();
      (void)arena.allocate(5000);
    }
    (void)arena.allocate(32);
  }
  EXPECT_EQ(arena.allocate(32), outer_first);
  EXPECT_EQ(arena.stats().bytes_used, 32u);
}

using StaleMarkDeathTest = testing::Test;

TEST(StaleMarkDeathTest, RewindToAMarkTakenAfterTheRewoundOneAborts) {
  monotonic_arena<malloc_resource, checked_config> arena;
  strata::arena_mark outer = arena.mark();
  (void)arena.allocate(10);
  strata::arena_mark inner = arena.mark();
  arena.rewind(outer);
  EXPECT_DEATH(arena.rewind(inner), "strata: stale arena mark .* in monotonic_arena::rewind");
}

TEST(StaleMarkDeathTest, RewindToAMarkTakenBeforeResetAborts) {
  monotonic_arena<malloc_resource, checked_config> arena;
  strata::arena_mark m = arena.mark();
  arena.reset();
  EXPECT_DEATH(arena.rewind(m), "strata: stale arena mark");
}

TEST(StaleMarkDeathTest, RewindToAnotherArenasMarkAborts) {
  monotonic_arena<> one;
  monotonic_arena<> two;
  strata::arena_mark m = one.mark();
  EXPECT_DEATH(two.rewind(m), "strata: foreign arena mark .* in monotonic_arena::rewind");
}

// Chunks the arena holds after filling ~1 MiB in chunks of 4..64 KiB, then a reset.
std::size_t reserved_after_reset(retention policy, upstream_counts& counts) {
  counted_arena arena(small_chunks(4096, 65536), counting_resource(counts));
  for (int i = 0; i < 1000; ++i) (void)arena.allocate(1000);
  arena.reset(policy);
  EXPECT_EQ(arena.stats().bytes_used, 0u);
  EXPECT_EQ(counts.live_bytes, arena.bytes_reserved());
  return arena.bytes_reserved();
}

TEST(Arena, ResetRetentionPolicies) {
  upstream_counts counts;
  EXPECT_EQ(reserved_after_reset(retention::keep_nothing, counts), 0u);
  EXPECT_EQ(counts.releases, 0u);
  EXPECT_EQ(reserved_after_reset(retention::release_to_os, counts), 0u);
  EXPECT_EQ(counts.releases, 1u);
  EXPECT_EQ(reserved_after_reset(retention::keep_largest, counts), 65536u);
  EXPECT_GE(reserved_after_reset(retention::keep_everything, counts), 1000000u);
  EXPECT_GE(reserved_after_reset(retention::decaying_high_water, counts), 1000000u);
  EXPECT_EQ(counts.live_bytes, 0u);
}

TEST(Arena, DecayingHighWaterShrinksAfterQuietCycles) {
  upstream_counts counts;
  arena_options options = small_chunks(4096, 65536);
  options.default_retention = retention::decaying_high_water;
  options.decay_percent = 50;
  counted_arena arena(options, counting_resource(counts));
  for (int i = 0; i < 1000; ++i) (void)arena.allocate(1000);
  arena.reset();
  std::size_t after_peak = arena.bytes_reserved();
  for (int cycle = 0; cycle < 10; ++cycle) {
    (void)arena.allocate(100);
    arena.reset();
  }
  EXPECT_LT(arena.bytes_reserved(), after_peak / 4);
  EXPECT_GT(arena.bytes_reserved(), 0u);
}

TEST(Arena, ResetReusesTheRetainedChunkWithoutUpstreamCalls) {
  upstream_counts counts;
  counted_arena arena(small_chunks(1 << 20), counting_resource(counts));
  for (int frame = 0; frame < 100; ++frame) {
    for (int i = 0; i < 500; ++i) (void)arena.allocate(1000);
    arena.reset(retention::keep_largest);
  }
  EXPECT_EQ(counts.allocations, 1u);
}

struct destruction_counter {
  int* destroyed;
  std::string payload = std::string(100, 'x');  // a heap-owning member
  ~destruction_counter() { ++*destroyed; }
};

TEST(Arena, RegisteredDestructorsRunOnRewindAndReset) {
  monotonic_arena<> arena;
  int destroyed = 0;
  (void)arena.make<destruction_counter>(&destroyed);
  strata::arena_mark m = arena.mark();
  (void)arena.make<destruction_counter>(&destroyed);
  std::span<std::string> strings = arena.make_array<std::string>(3);
  strings[2] = std::string(200, 'y');
  arena.rewind(m);
  EXPECT_EQ(destroyed, 1);
  arena.reset();
  EXPECT_EQ(destroyed, 2);
}

TEST(Arena, TrivialTypesRegisterNothing) {
  monotonic_arena<> arena;
  (void)arena.make<double>(1.5);
  std::span<int> ints = arena.make_array<int>(10);
  EXPECT_EQ(ints[9], 0);
  EXPECT_EQ(arena.stats().bytes_used, sizeof(double) + 10 * sizeof(int));
  EXPECT_EQ(arena.stats().allocations, 2u);
}

TEST(Arena, StatsAddUp) {
  monotonic_arena<> arena(small_chunks());
  std::size_t asked = 0;
  for (std::size_t i = 0; i < 500; ++i) {
    std::size_t bytes = 1 + i % 63;
    asked += bytes;
    (void)arena.allocate(bytes, 8);
  }
  strata::arena_stats s = arena.stats();
  EXPECT_EQ(s.bytes_used, asked);
  EXPECT_EQ(s.allocations, 500u);
  EXPECT_LE(s.alignment_waste, 500u * 7);
  EXPECT_LE(s.bytes_used + s.alignment_waste, s.bytes_reserved);
  EXPECT_EQ(s.peak_bytes_used, asked);
  arena.reset();
  EXPECT_EQ(arena.stats().peak_bytes_used, 0u);
  (void)arena.allocate(10);
  arena.reset_peak();
  EXPECT_EQ(arena.stats().peak_bytes_used, 10u);
}

template <class Arena>
concept has_stats = requires(const Arena& a) {
  a.stats();
};

TEST(Arena, MinimalModeCarriesNoCounters) {
  using minimal = monotonic_arena<malloc_resource, strata::minimal_arena_config>;
  static_assert(!has_stats<minimal>);
  static_assert(sizeof(minimal) < sizeof(monotonic_arena<>));
  minimal arena;
  EXPECT_NE(arena.allocate(64), nullptr);
}

TEST(Arena, InitialBufferIsUsedFirstAndNeverFreed) {
  upstream_counts counts;
  alignas(64) static unsigned char buffer[8192];
  counted_arena arena(buffer, sizeof buffer, small_chunks(), counting_resource(counts));
  void* p = arena.allocate(1000);
  EXPECT_GE(static_cast<unsigned char*>(p), buffer);
  EXPECT_LT(static_cast<unsigned char*>(p), buffer + sizeof buffer);
  EXPECT_EQ(counts.allocations, 0u);
  for (int i = 0; i < 20; ++i) (void)arena.allocate(1000);
  EXPECT_GT(counts.allocations, 0u);
  arena.reset(retention::keep_nothing);
  EXPECT_EQ(counts.live_bytes, 0u);
  EXPECT_EQ(arena.allocate(1000), p);
}

TEST(Arena, ServesStdPmrContainersThroughResourceRef) {
  monotonic_arena<> arena(small_chunks());
  strata::resource_ref resource(arena);
  std::pmr::vector<std::pmr::string> strings(&resource);
  for (int i = 0; i < 1000; ++i) strings.emplace_back(std::to_string(i) + std::string(40, 'z'));
  EXPECT_EQ(strings[999].substr(0, 3), "999");
  EXPECT_GT(arena.stats().bytes_used, 1000u * 40);
}

}  // namespace

#ifdef STRATA_ASAN
using ArenaAsanDeathTest = testing::Test;

// Reads through a pointer the optimiser cannot see through.
unsigned char read_byte(volatile unsigned char* p) {
  return *p;
}

TEST(ArenaAsanDeathTest, AddressSanitizerSeesRewoundAndUnallocatedMemory) {
  monotonic_arena<> arena;
  auto* live = static_cast<unsigned char*>(arena.allocate(64));
  EXPECT_EQ(read_byte(live + 63) | 1, read_byte(live + 63) | 1);
  EXPECT_DEATH((void)read_byte(live + 64), "use-after-poison");
  strata::arena_mark m = arena.mark();
  auto* rewound = static_cast<unsigned char*>(arena.allocate(64));
  arena.rewind(m);
  EXPECT_DEATH((void)read_byte(rewound), "use-after-poison");
}
#endif
