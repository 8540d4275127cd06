// A shadow model of live blocks for randomised heap tests: every block is
// filled with a pattern derived from its id, and checked against the model.
#pragma once

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "strata/strata.h"

struct shadow_block {
  std::size_t size;
  std::size_t alignment;
  std::uint8_t tag;
};

class shadow_heap {
 public:
  // Record a new block; fails the test if it overlaps a live one or is misaligned.
  void add(void* p, std::size_t size, std::size_t alignment, std::uint8_t tag) {
    ASSERT_NE(p, nullptr);
    auto addr = reinterpret_cast<std::uintptr_t>(p);
    ASSERT_EQ(addr % alignment, 0u) << "size " << size;
    ASSERT_GE(strata_usable_size(p), size);
    std::size_t extent = size == 0 ? 1 : size;
    auto next = live_.lower_bound(p);
    if (next != live_.end()) {
      ASSERT_LE(addr + extent, reinterpret_cast<std::uintptr_t>(next->first)) << "overlap";
    }
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      std::size_t prev_extent = prev->second.size == 0 ? 1 : prev->second.size;
      ASSERT_LE(reinterpret_cast<std::uintptr_t>(prev->first) + prev_extent, addr) << "overlap";
    }
    std::memset(p, tag, size);
    live_[p] = {size, alignment, tag};
  }

  // Verify the contents of a block and forget it.
  void remove(void* p) {
    verify(p);
    live_.erase(p);
  }

  void verify(void* p) const {
    const shadow_block& b = live_.at(p);
    auto* bytes = static_cast<const std::uint8_t*>(p);
    std::size_t step = b.size > 4096 ? 509 : 1;  // sample big blocks
    for (std::size_t i = 0; i < b.size; i += step)
      ASSERT_EQ(bytes[i], b.tag) << "corrupted at " << i;
    if (b.size != 0) {
      ASSERT_EQ(bytes[b.size - 1], b.tag);
    }
  }

  std::map<void*, shadow_block>& live() { return live_; }

 private:
  std::map<void*, shadow_block> live_;
};

// Log-uniform sizes from 0 up to `max`.
inline std::size_t log_uniform_size(std::mt19937_64& rng, std::size_t max) {
  std::uniform_real_distribution<double> exponent(0.0, std::log2(static_cast<double>(max)));
  return static_cast<std::size_t>(std::exp2(exponent(rng))) - 1;
}
