// Fuzz session_heap: allocations that bump in the buffer or overflow into the
// session's heap, frees, buffer rewinds and a final destroy, against the
// shadow model. Bad alignments must throw std::invalid_argument and sizes
// nothing can hold std::bad_alloc, neither touching the buffer.
#include <strata/session_heap.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#include "fuzz_input.hpp"
#include "shadow.hpp"
#include "sizes.hpp"

namespace {

using namespace strata::fuzz;

// Live bytes a run may hold in overflow blocks.
constexpr std::size_t budget = std::size_t{64} << 20;
// Above this, a request must fail (and below, with a good alignment, succeed).
constexpr std::size_t impossible = std::size_t{1} << 62;

class session_run {
 public:
  session_run(fuzz_input& in, std::size_t initial_bytes) : in_(in), session_(initial_bytes) {}

  void step() {
    switch (in_.byte() % 6) {
      case 0:
      case 1:
        return do_allocate();
      case 2:
      case 3:
        return do_deallocate();
      case 4:
        return do_rewind();
      default:
        return shadow_.verify_all();
    }
  }

  // Check every block, then destroy the session (which frees them all).
  void finish() {
    shadow_.verify_all();
    shadow_.clear();
    session_.destroy();
  }

 private:
  void do_allocate() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    if (bytes < impossible && bytes > budget - shadow_.live_bytes()) return;
    std::size_t left = session_.buffer_bytes_left();
    std::size_t overflows = session_.overflow_allocations();
    try {
      void* p = session_.allocate(bytes, alignment);
      check(strata::is_valid_alignment(alignment), "allocate took a bad alignment", p, alignment);
      check(bytes < impossible, "an impossible allocation succeeded", p, bytes);
      check(session_.in_buffer(p) || session_.overflow_allocations() == overflows + 1,
            "an overflow block was not counted", p);
      shadow_.add(p, bytes, alignment);
    } catch (const std::invalid_argument&) {
      check(!strata::is_valid_alignment(alignment), "invalid_argument for a good alignment");
      check(session_.buffer_bytes_left() == left, "a bad alignment moved the buffer");
    } catch (const std::bad_alloc&) {
      check(bytes >= impossible || alignment > (std::size_t{1} << 24),
            "bad_alloc for a request that fits", nullptr, bytes);
      check(session_.buffer_bytes_left() == left, "a failed allocation moved the buffer");
      check(session_.overflow_allocations() == overflows, "a failed allocation was counted");
    }
  }

  void do_deallocate() {
    if (shadow_.size() == 0) return;
    auto* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    std::size_t bytes = shadow_.at(reinterpret_cast<std::uintptr_t>(p)).bytes;
    shadow_.remove(p);
    session_.deallocate(p, in_.byte() % 2 ? bytes : 0);
  }

  // Every buffer block dies; overflow blocks live on.
  void do_rewind() {
    shadow_.remove_if([this](std::uintptr_t address, const live_block&) {
      return session_.in_buffer(reinterpret_cast<void*>(address));
    });
    session_.rewind_buffer();
  }

  fuzz_input& in_;
  strata::session_heap session_;
  shadow shadow_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  session_run run(in, in.below(20000));
  for (int steps = 0; steps < 500 && !in.done(); ++steps) run.step();
  run.finish();
  return 0;
}
