// Frames of allocations through strata-bench's frame strategies, for instruction
// counting: `frame_allocate STRATEGY SHAPE N` runs N frames, each one call of a run_
// function (callgrind collects those alone, so begin_frame/end_frame are left out).
// STRATEGY: default, minimal (strata's frame allocator), bump (the plain bump arena).
// SHAPE, each loop written as strata-bench's frame/frame-arena* scenarios write it:
// 64 (1,000 x 64 B), mix (1,000 x 7|31|63 B at alignment 1, a run-time value) or
// particles (the particles frame: 10,000 blocks, 640 KB, first byte written).
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "frame_shapes.hpp"
#include "frame_strategies.hpp"
#include "optimizer_barrier.hpp"

namespace {

// 1,000 blocks of `size` bytes; out of line so callgrind can collect it alone.
template <class Strategy>
[[gnu::noinline]] void run_single(Strategy& strategy, std::vector<void*>& blocks,
                                  std::size_t size) {
  for (auto& block : blocks) block = strategy.allocate(size, alignof(std::max_align_t));
  strata_bench::escape(blocks.data());
}

// 1,000 blocks cycling 7, 31 and 63 bytes at `alignment`.
template <class Strategy>
[[gnu::noinline]] void run_mix(Strategy& strategy, std::vector<void*>& blocks,
                               std::size_t alignment) {
  constexpr std::size_t requests[] = {7, 31, 63};
  for (std::size_t i = 0; i < blocks.size(); ++i)
    blocks[i] = strategy.allocate(requests[i % 3], alignment);
  strata_bench::escape(blocks.data());
}

// One realistic frame: every block allocated and its first byte written.
template <class Strategy>
[[gnu::noinline]] void run_frame(Strategy& strategy, const std::vector<std::size_t>& sizes,
                                 std::vector<void*>& blocks) {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = strategy.allocate(sizes[i], alignof(std::max_align_t));
    static_cast<char*>(blocks[i])[0] = 1;
  }
}

// Warm up (the first frame sets the thread's arena up), then run `frames` frames.
template <class Strategy>
int measure(std::string_view shape, int frames, std::size_t runtime_one) {
  auto strategy = std::make_unique<Strategy>();
  const std::vector<std::size_t> sizes =
      strata_bench::frame_sizes(strata_bench::realistic_frames[1]);
  std::vector<void*> blocks(shape == "particles" ? sizes.size() : 1000);
  for (int frame = 0; frame < frames + 1; ++frame) {
    strategy->begin_frame();
    if (shape == "64") run_single(*strategy, blocks, 64 * runtime_one);
    if (shape == "mix") run_mix(*strategy, blocks, runtime_one);
    if (shape == "particles") run_frame(*strategy, sizes, blocks);
    strategy->end_frame(blocks);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::string_view strategy = argv[1], shape = argv[2];
  const int frames = std::atoi(argv[3]);
  // 1, unknown to the compiler, as strata-bench's sizes and alignments are.
  static volatile std::size_t one = 1;
  const std::size_t runtime_one = one;
  if (strategy == "default")
    return measure<strata_bench::frame_default_strategy>(shape, frames, runtime_one);
  if (strategy == "minimal")
    return measure<strata_bench::frame_minimal_strategy>(shape, frames, runtime_one);
  if (strategy == "bump")
    return measure<strata_bench::frame_bump_strategy>(shape, frames, runtime_one);
  return 2;
}
