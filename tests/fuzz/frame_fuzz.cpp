// Fuzz frame_allocator: frames (single or double buffered), tagged frame
// blocks, batches and pooled blocks, against the shadow model. Frame blocks
// die when their frame's memory is reset, pool blocks when freed; bad
// alignments and sizes must throw and leave the frame as it was; the report
// must give each tag the bytes the run attributed to it.
#include <strata/frame.hpp>

#include <array>
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

using frames_type = strata::frame_allocator<bounded_resource>;

// Shadow owners: pool blocks, and frame blocks by the frame they belong to.
constexpr unsigned pool_owner = 0;
constexpr unsigned tags = 3;

class frame_run {
 public:
  frame_run(fuzz_input& in, strata::frame_options options)
      : in_(in), double_buffered_(options.double_buffered), frames_(options) {
    for (unsigned t = 1; t < tags; ++t) frames_.register_tag("tag");
    frames_.begin_frame();
  }

  void step() {
    switch (in_.byte() % 8) {
      case 0:
      case 1:
        return do_allocate();
      case 2:
        return do_batch();
      case 3:
        return do_pool_allocate();
      case 4:
        return do_pool_deallocate();
      case 5:
        return do_end_frame();
      case 6:
        return do_arena_try_allocate();
      default:
        return shadow_.verify_all();
    }
  }

  // Give every pool block back, so the pools' pages are all free again.
  void finish() {
    shadow_.verify_all();
    shadow_.remove_if([this](std::uintptr_t address, const live_block& b) {
      if (b.owner != pool_owner) return false;
      pool_blocks_freed_.push_back(reinterpret_cast<void*>(address));
      return true;
    });
    for (void* p : pool_blocks_freed_) frames_.pool_deallocate(p);
  }

 private:
  unsigned frame_owner() const { return 1 + static_cast<unsigned>(frame_ % 2); }

  void do_allocate() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    auto tag = static_cast<strata::frame_tag>(in_.byte() % 8 == 0 ? strata::max_frame_tags
                                                                  : in_.byte() % tags);
    std::size_t left = frames_.this_thread_arena().bytes_left_in_chunk();
    try {
      void* p = frames_.allocate(bytes, alignment, tag);
      check(strata::is_valid_alignment(alignment) && tag < tags, "allocate took bad input", p);
      shadow_.add(p, bytes, alignment, frame_owner());
      tag_bytes_[tag] += bytes;
    } catch (const std::invalid_argument&) {  // nothing counted
      check(!strata::is_valid_alignment(alignment) || tag >= tags,
            "invalid_argument for good input");
      check(frames_.this_thread_arena().bytes_left_in_chunk() == left,
            "a bad call moved the frame");
    } catch (const std::bad_alloc&) {
      check(bytes > bounded_resource::budget / 2 || alignment > bounded_resource::budget / 2 ||
                near_budget(),
            "bad_alloc for a small request", nullptr, bytes);
    }
  }

  // Whether the upstream may refuse a small request now.
  bool near_budget() {
    return frames_.this_thread_arena().upstream().get().held() > bounded_resource::budget / 2;
  }

  void do_batch() {
    std::size_t bytes = in_.below(200);
    std::size_t count = in_.below(33);
    std::size_t alignment = std::size_t{1} << in_.below(7);
    void* out[32];
    try {
      frames_.allocate_batch(bytes, count, out, alignment);
    } catch (const std::bad_alloc&) {
      return check(near_budget(), "batch: bad_alloc for a small request", nullptr, bytes * count);
    }
    for (std::size_t i = 0; i < count; ++i) shadow_.add(out[i], bytes, alignment, frame_owner());
    tag_bytes_[0] += bytes * count;
  }

  void do_arena_try_allocate() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    auto& arena = frames_.this_thread_arena();
    std::size_t left = arena.bytes_left_in_chunk();
    void* p = arena.try_allocate(bytes, alignment);
    if (p == nullptr) return check(arena.bytes_left_in_chunk() == left, "null try_allocate moved");
    check(strata::is_valid_alignment(alignment), "try_allocate took a bad alignment", p);
    shadow_.add(p, bytes, alignment, frame_owner());
  }

  void do_pool_allocate() {
    std::size_t bytes = in_.byte() % 8 == 0 ? pick_size(in_) : in_.below(257);
    try {
      void* p = frames_.pool_allocate(bytes);
      check(bytes <= frames_type::max_pooled_bytes, "pool_allocate of a size too large", p);
      shadow_.add(p, bytes, bytes > 16 ? 32 : 16, pool_owner);
    } catch (const std::bad_alloc&) {
      check(bytes > frames_type::max_pooled_bytes || near_budget(), "bad_alloc for a pooled size",
            nullptr, bytes);
    }
  }

  void do_pool_deallocate() {
    if (shadow_.size() == 0) return;
    std::uintptr_t address = shadow_.nth(in_.below(shadow_.size()));
    if (shadow_.at(address).owner != pool_owner) return;
    shadow_.remove(reinterpret_cast<void*>(address));
    frames_.pool_deallocate(reinterpret_cast<void*>(address));
  }

  // End the frame: its memory (double buffered: the previous frame's) dies.
  void do_end_frame() {
    unsigned dying = double_buffered_ ? 1 + static_cast<unsigned>((frame_ + 1) % 2) : frame_owner();
    shadow_.remove_if([dying](std::uintptr_t, const live_block& b) { return b.owner == dying; });
    frames_.end_frame();
    strata::frame_report report = frames_.report();
    for (unsigned t = 0; t < tags; ++t)
      check(report.tags[t].last_frame_bytes == tag_bytes_[t], "report: tag bytes", nullptr, t);
    tag_bytes_.fill(0);
    ++frame_;
    frames_.begin_frame();
  }

  fuzz_input& in_;
  bool double_buffered_;
  frames_type frames_;
  shadow shadow_;
  std::uint64_t frame_ = 0;
  std::array<std::size_t, tags> tag_bytes_{};
  std::vector<void*> pool_blocks_freed_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  strata::frame_options options;
  options.arena.growth = {std::size_t{256} << in.below(8), 2, std::size_t{1} << 22};
  options.double_buffered = in.byte() % 2;
  options.pool_page_bytes = std::size_t{4096} << in.below(3);
  frame_run run(in, options);
  for (int steps = 0; steps < 500 && !in.done(); ++steps) run.step();
  run.finish();
  return 0;
}
