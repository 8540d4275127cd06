// Randomised arena test against a shadow model of live blocks, fixed seed.
#include <strata/arena.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr strata::arena_config checked_config{.statistics = true, .checked = true};

struct shadow_block {
  unsigned char* p;
  std::size_t bytes;
  unsigned char fill;
};

// Every live block still holds its fill and no two live blocks overlap.
void expect_consistent(std::vector<shadow_block> blocks) {
  std::sort(blocks.begin(), blocks.end(), [](auto& a, auto& b) { return a.p < b.p; });
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (std::size_t j = 0; j < blocks[i].bytes; ++j) ASSERT_EQ(blocks[i].p[j], blocks[i].fill);
    if (i > 0) {
      ASSERT_LE(blocks[i - 1].p + blocks[i - 1].bytes, blocks[i].p);
    }
  }
}

TEST(ArenaRandom, AllocateMarkRewindResetAgainstShadow) {
  std::mt19937_64 rng(20240517);
  strata::arena_options options;
  options.growth = {4096, 2, 256 * 1024};
  strata::monotonic_arena<strata::malloc_resource, checked_config> arena(options);
  std::vector<shadow_block> live;
  std::vector<std::pair<strata::arena_mark, std::size_t>> marks;  // mark, live count then
  std::size_t used = 0;
  for (int step = 0; step < 20000; ++step) {
    unsigned op = rng() % 100;
    if (op < 85) {
      std::size_t bytes = rng() % 4 == 0 ? rng() % 20000 : rng() % 200;
      std::size_t alignment = std::size_t{1} << (rng() % 9);
      auto* p = static_cast<unsigned char*>(arena.allocate(bytes, alignment));
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
      auto fill = static_cast<unsigned char>(rng());
      std::memset(p, fill, bytes);
      live.push_back({p, bytes, fill});
      used += bytes + (bytes == 0);
    } else if (op < 92) {
      marks.emplace_back(arena.mark(), live.size());
    } else if (op < 98 && !marks.empty()) {
      std::size_t pick = rng() % marks.size();
      arena.rewind(marks[pick].first);
      for (std::size_t i = marks[pick].second; i < live.size(); ++i)
        used -= live[i].bytes + (live[i].bytes == 0);
      live.resize(marks[pick].second);
      marks.resize(pick + 1);
    } else if (op >= 98) {
      arena.reset(static_cast<strata::retention>(rng() % 5));
      live.clear();
      marks.clear();
      used = 0;
    }
    ASSERT_EQ(arena.stats().bytes_used, used);
    if (step % 1000 == 0) expect_consistent(live);
  }
  expect_consistent(live);
}

}  // namespace
