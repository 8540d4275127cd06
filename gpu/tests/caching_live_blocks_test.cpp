// The caching allocator's table of handed-out blocks: every insertion is
// found, every removal leaves the others findable (backward-shift deletion
// keeps probe runs whole), across growth.
#include "../src/caching/live_blocks.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

namespace strata::gpu::caching {
namespace {

TEST(caching_live_blocks, FindsWhatItHoldsThroughRemovalsAndGrowth) {
  static char memory[4096 * 512];
  std::vector<std::unique_ptr<block>> blocks;
  for (std::size_t i = 0; i < 4096; ++i)
    blocks.push_back(
        std::make_unique<block>(memory + i * 512, 512, stream_ref{}, pool_kind::small, 0));
  live_blocks table;
  std::vector<bool> held(blocks.size(), false);
  std::mt19937 random(19);
  for (int step = 0; step < 40000; ++step) {
    const std::size_t i = random() % blocks.size();
    if (held[i]) {
      EXPECT_EQ(table.take(blocks[i]->ptr), blocks[i].get());
    } else {
      table.insert(blocks[i].get());
    }
    held[i] = !held[i];
    if (step % 1000 != 0) continue;
    for (std::size_t j = 0; j < blocks.size(); ++j)
      EXPECT_EQ(table.find(blocks[j]->ptr), held[j] ? blocks[j].get() : nullptr);
  }
  EXPECT_EQ(table.take(memory + 1), nullptr);
}

}  // namespace
}  // namespace strata::gpu::caching
