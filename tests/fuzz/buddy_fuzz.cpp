// Fuzz buddy: a fuzzed region and minimum block, and a stream of allocations
// of edge sizes and alignments and frees, against the shadow model: blocks
// aligned, disjoint, their bytes kept; bytes in use equal the power-of-two
// blocks the shadow holds; a request some free block holds is never refused;
// freeing everything merges the region back into one block.
#include <strata/buddy.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <stdexcept>

#include "bounded_resource.hpp"
#include "fuzz_input.hpp"
#include "shadow.hpp"
#include "sizes.hpp"

namespace {

using namespace strata::fuzz;

// The block size buddy gives a request (0 when none could hold it).
std::size_t block_size(const strata::buddy_config& config, std::size_t bytes,
                       std::size_t alignment) {
  std::size_t need = std::max({bytes, alignment, config.min_block});
  if (need > config.total_bytes) return 0;
  std::size_t size = config.min_block;
  while (size < need) size *= 2;
  return size;
}

void run(fuzz_input& in) {
  strata::buddy_config config;
  config.min_block = std::size_t{16} << in.below(8);
  config.total_bytes = std::max(config.min_block, std::size_t{1} << (12 + in.below(13)));
  config.region_alignment = std::size_t{16} << in.below(12);
  strata::buddy<bounded_resource> pool(config);
  std::size_t region_alignment = std::min(config.region_alignment, config.total_bytes);
  shadow blocks;
  std::map<std::uintptr_t, std::size_t> sizes;
  std::size_t in_use = 0;
  for (int steps = 0; steps < 500 && !in.done(); ++steps) {
    switch (in.byte() % 5) {
      case 0:
      case 1: {
        std::size_t bytes = pick_size(in);
        std::size_t alignment = pick_alignment(in);
        std::size_t largest = pool.statistics().largest_free;
        std::size_t size = power_of_two(alignment) ? block_size(config, bytes, alignment) : 0;
        try {
          void* p = pool.allocate(bytes, alignment);
          check(size != 0 && alignment <= region_alignment, "a bad request was served", p, bytes);
          check((reinterpret_cast<std::uintptr_t>(p) - pool.base()) % size == 0,
                "a block is not at a multiple of its size", p, size);
          blocks.add(p, bytes, alignment);
          sizes[reinterpret_cast<std::uintptr_t>(p)] = size;
          in_use += size;
        } catch (const std::invalid_argument&) {
          check(!power_of_two(alignment), "invalid_argument for a good alignment", nullptr,
                alignment);
        } catch (const std::bad_alloc&) {
          check(size == 0 || size > largest || alignment > region_alignment,
                "refused a request a free block holds", nullptr, bytes);
        }
        break;
      }
      case 2:
      case 3:
        if (blocks.size() != 0) {
          std::uintptr_t address = blocks.nth(in.below(blocks.size()));
          std::size_t bytes = blocks.at(address).bytes;
          blocks.remove(reinterpret_cast<void*>(address));
          pool.deallocate(reinterpret_cast<void*>(address), bytes);
          in_use -= sizes[address];
          sizes.erase(address);
        }
        break;
      default:
        blocks.verify_all();
        break;
    }
    strata::buddy_statistics s = pool.statistics();
    check(s.bytes_in_use == in_use && s.blocks_in_use == blocks.size() &&
              s.bytes_in_use + s.bytes_free == s.bytes_reserved,
          "statistics differ from the shadow", nullptr, s.bytes_in_use);
  }
  while (blocks.size() != 0) {
    std::uintptr_t address = blocks.nth(0);
    std::size_t bytes = blocks.at(address).bytes;
    blocks.remove(reinterpret_cast<void*>(address));
    pool.deallocate(reinterpret_cast<void*>(address), bytes);
  }
  check(pool.statistics().largest_free == config.total_bytes,
        "freeing everything left the region split");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  run(in);
  return 0;
}
