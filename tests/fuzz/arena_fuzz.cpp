// Fuzz monotonic_arena: allocate, try_allocate, batches, marks, rewinds and
// resets with edge sizes and alignments, against the shadow model. Bad
// alignments must throw std::invalid_argument (try_allocate: null), sizes the
// upstream cannot give std::bad_alloc, and neither may change the arena; the
// statistics must match the blocks the shadow holds.
#include <strata/arena.hpp>

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

constexpr strata::arena_config fuzz_config{.statistics = true, .checked = true};
using arena_type = strata::monotonic_arena<bounded_resource, fuzz_config>;

// A mark, with the shadow's and the counters' state when it was taken.
struct taken_mark {
  strata::arena_mark mark;
  std::uint64_t last_id;
  std::size_t used, allocations;
};

class arena_run {
 public:
  arena_run(fuzz_input& in, strata::arena_options options) : in_(in), arena_(options) {}

  void step() {
    switch (in_.byte() % 8) {
      case 0:
      case 1:
        return do_allocate();
      case 2:
        return do_try_allocate();
      case 3:
        return do_batch();
      case 4:
        return do_mark();
      case 5:
        return do_rewind();
      case 6:
        return do_reset();
      default:
        return shadow_.verify_all();
    }
  }

  // The counters must say what the shadow holds.
  void check_stats() {
    strata::arena_stats s = arena_.stats();
    check(s.allocations == allocations_, "stats: allocations", nullptr, s.allocations);
    check(s.bytes_used == used_, "stats: bytes used", nullptr, s.bytes_used);
    check(s.peak_bytes_used >= s.bytes_used, "stats: peak below use", nullptr, s.peak_bytes_used);
    check(s.bytes_reserved == arena_.upstream().held(), "stats: bytes reserved", nullptr,
          s.bytes_reserved);
  }

 private:
  // What a failed call must leave: the same cursor and counters.
  struct state {
    std::size_t left, used, allocations;
  };
  state now() const {
    strata::arena_stats s = arena_.stats();
    return {arena_.bytes_left_in_chunk(), s.bytes_used, s.allocations};
  }
  void check_unchanged(const state& before, const char* what) const {
    state after = now();
    check(after.left == before.left && after.used == before.used &&
              after.allocations == before.allocations,
          what);
  }

  void record(void* p, std::size_t bytes, std::size_t alignment, std::size_t counted) {
    shadow_.add(p, bytes, alignment);
    used_ += counted;
    ++allocations_;
  }

  void do_allocate() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    state before = now();
    try {
      void* p = arena_.allocate(bytes, alignment);
      check(power_of_two(alignment), "allocate took a bad alignment", p, alignment);
      record(p, bytes, alignment, bytes + (bytes == 0));
    } catch (const std::invalid_argument&) {
      check(!power_of_two(alignment), "invalid_argument for a good alignment", nullptr, alignment);
      check_unchanged(before, "a bad alignment changed the arena");
    } catch (const std::bad_alloc&) {
      check(bytes > bounded_resource::budget / 2 || alignment > bounded_resource::budget / 2 ||
                arena_.upstream().held() > bounded_resource::budget / 2,
            "bad_alloc for a small request", nullptr, bytes);
      check_unchanged(before, "a failed allocation changed the arena");
    }
  }

  void do_try_allocate() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    state before = now();
    void* p = arena_.try_allocate(bytes, alignment);
    if (p == nullptr) {
      check_unchanged(before, "a null try_allocate changed the arena");
      return;
    }
    check(power_of_two(alignment), "try_allocate took a bad alignment", p, alignment);
    record(p, bytes, alignment, bytes + (bytes == 0));
  }

  void do_batch() {
    std::size_t bytes = in_.byte() % 2 ? pick_size(in_) : in_.below(100);
    std::size_t count = in_.below(33);
    std::size_t alignment = pick_alignment(in_);
    void* out[32];
    state before = now();
    try {
      arena_.allocate_batch(bytes, count, out, alignment);
    } catch (const std::invalid_argument&) {
      check(!power_of_two(alignment), "batch: invalid_argument for a good alignment");
      return check_unchanged(before, "a bad batch changed the arena");
    } catch (const std::bad_alloc&) {  // and bad_array_new_length
      return check_unchanged(before, "a failed batch changed the arena");
    }
    for (std::size_t i = 0; i < count; ++i) {
      shadow_.add(out[i], bytes, alignment);
      used_ += bytes;
      ++allocations_;
    }
  }

  void do_mark() {
    if (marks_.size() == 16) return;
    marks_.push_back({arena_.mark(), shadow_.last_id(), used_, allocations_});
  }

  void do_rewind() {
    if (marks_.empty()) return;
    marks_.resize(1 + in_.below(marks_.size()));  // marks after the chosen one go stale
    const taken_mark& m = marks_.back();
    std::uint64_t last = m.last_id;
    shadow_.remove_if([last](std::uintptr_t, const live_block& b) { return b.id > last; });
    arena_.rewind(m.mark);
    used_ = m.used;
    allocations_ = m.allocations;
  }

  void do_reset() {
    static constexpr strata::retention policies[] = {
        strata::retention::keep_nothing, strata::retention::keep_largest,
        strata::retention::keep_everything, strata::retention::decaying_high_water,
        strata::retention::release_to_os};
    shadow_.verify_all();
    shadow_.clear();
    marks_.clear();
    arena_.reset(policies[in_.byte() % 5]);
    used_ = allocations_ = 0;
  }

  fuzz_input& in_;
  arena_type arena_;
  shadow shadow_;
  std::vector<taken_mark> marks_;
  std::size_t used_ = 0, allocations_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  strata::arena_options options;
  options.growth = {std::size_t{64} << in.below(12), 1 + in.below(4), std::size_t{1} << 22};
  arena_run run(in, options);
  for (int steps = 0; steps < 500 && !in.done(); ++steps) {
    run.step();
    run.check_stats();
  }
  return 0;
}
