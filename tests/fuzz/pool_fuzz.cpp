// Fuzz the pools: fixed_pool and concurrent_fixed_pool of a fuzzed block size,
// alignment and chunk size, object_pool<T>, and the slab, against the shadow
// model: blocks aligned, disjoint, their bytes kept; live_blocks() equal to
// the blocks the shadow holds; the resource face's answers to bad requests.
#include <strata/pool.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

#include "bounded_resource.hpp"
#include "fuzz_input.hpp"
#include "shadow.hpp"
#include "sizes.hpp"

namespace {

using namespace strata::fuzz;

// Operations on a pool of blocks of `block_bytes` aligned to `alignment`.
template <class Pool>
class pool_run {
 public:
  pool_run(fuzz_input& in, Pool& pool, std::size_t block_bytes, std::size_t alignment)
      : in_(in),
        pool_(pool),
        block_bytes_(block_bytes),
        alignment_(alignment),
        stride_(strata::align_up(std::max<std::size_t>(block_bytes, 16),
                                 std::max<std::size_t>(alignment, 8))) {}

  void step() {
    switch (in_.byte() % 7) {
      case 0:
      case 1:
        return do_allocate();
      case 2:
        return do_deallocate();
      case 3:
        return do_batch();
      case 4:
        return do_free_batch();
      case 5:
        return do_resource_face();
      default:
        return shadow_.verify_all();
    }
  }

  // live_blocks() must count what the shadow holds.
  void check_count() const {
    check(pool_.live_blocks() == shadow_.size(), "live_blocks differs from the shadow", nullptr,
          pool_.live_blocks());
  }

  // Give everything back.
  void finish() {
    while (shadow_.size() != 0) {
      auto* p = reinterpret_cast<void*>(shadow_.nth(0));
      shadow_.remove(p);
      pool_.deallocate(p);
    }
    check_count();
  }

 private:
  // Whether `more` blocks could take the chunks past the upstream's budget: a
  // chunk holds at least one block, and wastes less than a block and its header.
  bool near_budget(std::size_t more) const {
    return (shadow_.size() + more) * (2 * stride_ + 64) > bounded_resource::budget;
  }

  void do_allocate() {
    if (near_budget(1)) return;
    shadow_.add(pool_.allocate(), block_bytes_, alignment_);
  }

  void do_deallocate() {
    if (shadow_.size() == 0) return;
    auto* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    shadow_.remove(p);
    pool_.deallocate(p);
  }

  void do_batch() {
    std::size_t count = in_.below(65);
    if (near_budget(count)) return;
    void* out[64];
    pool_.allocate_batch(count, out);
    for (std::size_t i = 0; i < count; ++i) shadow_.add(out[i], block_bytes_, alignment_);
  }

  void do_free_batch() {
    std::size_t count = std::min<std::size_t>(in_.below(65), shadow_.size());
    void* blocks[64];
    for (std::size_t i = 0; i < count; ++i) {
      blocks[i] = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
      shadow_.remove(blocks[i]);
    }
    pool_.deallocate_batch(blocks, count);
  }

  // allocate(bytes, alignment): a block when it fits, else the documented throw.
  void do_resource_face() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    try {
      void* p = pool_.allocate(bytes, alignment);
      check(bytes <= block_bytes_ && alignment <= alignment_, "a request too big was served", p);
      shadow_.add(p, bytes, alignment);
      shadow_.remove(p);
      pool_.deallocate(p, bytes, alignment);
    } catch (const std::invalid_argument&) {
      check(!power_of_two(alignment), "invalid_argument for a good alignment", nullptr, alignment);
    } catch (const std::bad_alloc&) {
      check(bytes > block_bytes_ || alignment > alignment_, "bad_alloc for a request that fits",
            nullptr, bytes);
    }
  }

  fuzz_input& in_;
  Pool& pool_;
  shadow shadow_;
  std::size_t block_bytes_;
  std::size_t alignment_;
  std::size_t stride_;
};

// Build a pool from the input's first bytes, or check the constructor's
// refusal; then run operations on it.
template <class Pool>
void fuzz_pool(fuzz_input& in) {
  std::size_t block_bytes = in.byte() % 16 == 0 ? pick_size(in) : in.below(600);
  std::size_t alignment = in.byte() % 16 == 0 ? pick_alignment(in) : std::size_t{1} << in.below(8);
  std::size_t chunk_bytes = std::size_t{1} << (8 + in.below(12));
  bool fits =
      power_of_two(alignment) && block_bytes <= chunk_bytes && alignment <= chunk_bytes &&
      strata::align_up(16, alignment) + strata::align_up(std::max<std::size_t>(block_bytes, 16),
                                                         std::max<std::size_t>(alignment, 8)) <=
          chunk_bytes;
  try {
    Pool pool(block_bytes, alignment, chunk_bytes);
    check(fits, "a pool was built from arguments that do not fit", nullptr, block_bytes);
    pool_run<Pool> run(in, pool, block_bytes, alignment);
    for (int steps = 0; steps < 400 && !in.done(); ++steps) {
      run.step();
      run.check_count();
    }
    run.finish();
  } catch (const std::invalid_argument&) {
    check(!fits, "a pool refused arguments that fit", nullptr, block_bytes);
  }
}

struct object {
  std::uint64_t words[5];
  static inline std::size_t alive = 0;
  object() { ++alive; }
  ~object() { --alive; }
};

// object_pool: constructs on create, destroys on destroy, reuses blocks.
void fuzz_object_pool(fuzz_input& in) {
  strata::object_pool<object, bounded_resource> objects(std::size_t{1} << (8 + in.below(10)));
  std::vector<object*> live;
  for (int steps = 0; steps < 400 && !in.done(); ++steps) {
    if (in.byte() % 2 == 0 || live.empty()) {
      object* o = objects.create();
      check(reinterpret_cast<std::uintptr_t>(o) % alignof(object) == 0, "object misaligned", o);
      for (std::uint64_t& w : o->words) w = reinterpret_cast<std::uintptr_t>(o);
      live.push_back(o);
    } else {
      std::size_t i = in.below(live.size());
      for (std::uint64_t w : live[i]->words)
        check(w == reinterpret_cast<std::uintptr_t>(live[i]), "object contents changed", live[i]);
      objects.destroy(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    check(objects.live_objects() == live.size() && object::alive == live.size(),
          "object counts differ", nullptr, live.size());
  }
  for (object* o : live) objects.destroy(o);
}

// The slab: whole pages, aligned to their size, taken back for reuse.
void fuzz_slab(fuzz_input& in) {
  std::size_t page_bytes = std::size_t{4096} << in.below(4);
  strata::slab<bounded_resource> pages(page_bytes, 1 + in.below(8));
  shadow shadow;
  for (int steps = 0; steps < 200 && !in.done(); ++steps) {
    if ((in.byte() % 2 == 0 || shadow.size() == 0) && shadow.size() < 64) {
      shadow.add(pages.allocate(page_bytes, page_bytes), page_bytes, page_bytes);
    } else {
      auto* p = reinterpret_cast<void*>(shadow.nth(in.below(shadow.size())));
      shadow.remove(p);
      pages.deallocate(p);
    }
    check(pages.pages_held() - pages.pages_free() == shadow.size(), "slab page counts differ");
  }
  while (shadow.size() != 0) {
    auto* p = reinterpret_cast<void*>(shadow.nth(0));
    shadow.remove(p);
    pages.deallocate(p);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  switch (in.byte() % 5) {
    case 0:
      fuzz_pool<strata::fixed_pool<bounded_resource>>(in);
      break;
    case 1:
      fuzz_pool<strata::concurrent_fixed_pool<bounded_resource>>(in);
      break;
    case 2:
      fuzz_pool<strata::fixed_pool<bounded_resource, strata::pool_config{.checked = false}>>(in);
      break;
    case 3:
      fuzz_object_pool(in);
      break;
    default:
      fuzz_slab(in);
      break;
  }
  return 0;
}
