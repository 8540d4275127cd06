#include "unified_block_sets.hpp"

#include <cstring>
#include <random>

namespace strata_bench {

namespace {
constexpr std::size_t megabyte = 1u << 20;
}

std::vector<std::size_t> sizes_between(std::size_t count, std::size_t low, std::size_t high,
                                       unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> size(low, high);
  std::vector<std::size_t> sizes(count);
  for (auto& each : sizes) each = size(random);
  return sizes;
}

std::vector<std::size_t> unified_small_blocks() {
  return sizes_between(256, 4096, megabyte, 1);
}

std::vector<std::size_t> unified_medium_blocks() {
  return sizes_between(16, megabyte, 10 * megabyte, 2);
}

std::vector<std::size_t> unified_large_blocks() {
  return {16 * megabyte, 32 * megabyte, 64 * megabyte};
}

// The medium blocks go in among the small ones, one every nine, as a program mixes them.
std::vector<std::size_t> unified_mixed_blocks() {
  std::vector<std::size_t> sizes = sizes_between(64, 4096, megabyte, 3);
  const std::vector<std::size_t> medium = sizes_between(8, megabyte, 10 * megabyte, 4);
  for (std::size_t i = 0; i < medium.size(); ++i)
    sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(i * 9), medium[i]);
  sizes.push_back(20 * megabyte);
  return sizes;
}

std::vector<std::size_t> unified_repeated_1mb_blocks() {
  return std::vector<std::size_t>(64, megabyte);
}

std::uint64_t write_and_read(char* block, std::size_t bytes, int value) {
  std::memset(block, value, bytes);
  std::uint64_t sum = 0;
  for (std::size_t offset = 0; offset < bytes; offset += 64)
    sum += static_cast<unsigned char>(block[offset]);
  return sum;
}

std::vector<unified_team> unified_teams() {
  return {{"4 threads, small", 4, 32, 4096, megabyte},
          {"8 threads, mixed", 8, 8, 4096, 4 * megabyte}};
}

}  // namespace strata_bench
