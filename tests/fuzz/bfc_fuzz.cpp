// Fuzz bfc: a fuzzed configuration (granule, region sizes, growth, caps, split
// rule) and a stream of allocations of edge sizes and alignments, frees,
// garbage collections and trims, against the shadow model: blocks aligned,
// disjoint, their bytes kept; after each step the chunks tile every region,
// no two free chunks touch, the statistics add up, and a request that fits a
// free chunk is never refused.
#include <strata/bfc.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#include "bounded_resource.hpp"
#include "fuzz_input.hpp"
#include "shadow.hpp"
#include "sizes.hpp"

namespace {

using namespace strata::fuzz;
using pool_type = strata::bfc<bounded_resource>;

// The chunk size a request needs, as bfc computes it (saturating).
std::size_t needed(const strata::bfc_config& config, std::size_t bytes, std::size_t alignment) {
  std::size_t g = config.granule;
  std::size_t size = bytes > SIZE_MAX - g ? SIZE_MAX : std::max(strata::align_up(bytes, g), g);
  if (alignment > g) size = size > SIZE_MAX - alignment ? SIZE_MAX : size + alignment - g;
  return size;
}

// Chunks tile each region, no two free ones touch, the sums match.
void check_structure(const pool_type& pool) {
  strata::bfc_statistics s = pool.statistics();
  std::size_t used = 0, free = 0, reserved = 0, largest = 0;
  std::uintptr_t expect = 0;
  bool previous_free = false;
  pool.visit([&](std::uintptr_t base, std::size_t bytes, std::uintptr_t chunk, std::size_t size,
                 bool is_free) {
    if (chunk == base) {
      reserved += bytes;
      expect = base;
      previous_free = false;
    }
    check(chunk == expect && size != 0, "chunks do not tile the region", nullptr, chunk);
    check(chunk + size <= base + bytes, "a chunk runs past its region", nullptr, chunk);
    check(!(is_free && previous_free), "two adjacent free chunks", nullptr, chunk);
    previous_free = is_free;
    expect = chunk + size;
    (is_free ? free : used) += size;
    if (is_free) largest = std::max(largest, size);
  });
  check(s.bytes_in_use == used && s.bytes_free == free && s.bytes_reserved == reserved &&
            used + free == reserved && s.largest_free == largest,
        "statistics differ from the chunks", nullptr, used);
}

void run(fuzz_input& in) {
  strata::bfc_config config;
  config.granule = std::size_t{16} << in.below(5);
  config.initial_region_bytes = std::size_t{1} << (8 + in.below(13));
  config.growth = in.byte() % 2 ? strata::bfc_growth::fixed : strata::bfc_growth::doubling;
  config.max_region_bytes = std::max(config.granule, std::size_t{1} << (10 + in.below(14)));
  config.max_reserved_bytes = in.byte() % 4 == 0 ? std::size_t{1} << (12 + in.below(14)) : SIZE_MAX;
  config.min_split_bytes = in.below(1024);
  config.split_waste_shift = static_cast<unsigned>(in.below(8));
  pool_type pool(config);
  shadow blocks;
  for (int steps = 0; steps < 500 && !in.done(); ++steps) {
    switch (in.byte() % 8) {
      case 0:
      case 1:
      case 2: {
        std::size_t bytes = pick_size(in);
        std::size_t alignment = pick_alignment(in);
        std::size_t largest = pool.statistics().largest_free;
        try {
          void* p = pool.allocate(bytes, alignment);
          check(power_of_two(alignment), "a bad alignment was served", p, alignment);
          blocks.add(p, bytes, alignment);
        } catch (const std::invalid_argument&) {
          check(!power_of_two(alignment), "invalid_argument for a good alignment", nullptr,
                alignment);
        } catch (const std::bad_alloc&) {
          check(needed(config, bytes, alignment) > largest, "refused a request a free chunk fits",
                nullptr, bytes);
        }
        break;
      }
      case 3:
      case 4:
        if (blocks.size() != 0) {
          auto* p = reinterpret_cast<void*>(blocks.nth(in.below(blocks.size())));
          std::size_t bytes = blocks.at(reinterpret_cast<std::uintptr_t>(p)).bytes;
          blocks.remove(p);
          pool.deallocate(p, bytes);
        }
        break;
      case 5:
        pool.garbage_collect();
        check(pool.statistics().bytes_reserved == pool.upstream().held(),
              "garbage_collect lost track of a region");
        break;
      case 6: {
        std::size_t keep = in.number(3);
        pool.trim(keep);
        break;
      }
      default:
        blocks.verify_all();
        break;
    }
    check_structure(pool);
    check(pool.statistics().chunks_in_use == blocks.size(), "chunks in use differ from the shadow");
  }
  while (blocks.size() != 0) {
    auto* p = reinterpret_cast<void*>(blocks.nth(0));
    std::size_t bytes = blocks.at(reinterpret_cast<std::uintptr_t>(p)).bytes;
    blocks.remove(p);
    pool.deallocate(p, bytes);
  }
  check(pool.statistics().bytes_in_use == 0, "bytes in use after freeing everything");
  pool.garbage_collect();
  check(pool.statistics().bytes_reserved == 0 && pool.upstream().held() == 0,
        "garbage_collect kept a free region");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  run(in);
  return 0;
}
