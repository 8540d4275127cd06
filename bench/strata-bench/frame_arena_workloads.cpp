// Seed 004 (framealloc), strata's frame allocator beside the seed's strategies: single
// allocations 64 B-64 KB, batches of 1,000 (one call each, the batch API, one
// contiguous block) and the three realistic frames, each strategy in turn.
#include <memory>
#include <string>
#include <vector>

#include "cycle_clock.hpp"
#include "frame_shapes.hpp"
#include "frame_strategies.hpp"
#include "optimizer_barrier.hpp"
#include "size_label.hpp"
#include "workloads.hpp"

namespace strata_bench {

namespace {

// Nanoseconds per allocation of one frame of blocks.size() allocations of `size`
// bytes; the frame's end (frees or reset) is not timed.
template <class Strategy>
double allocation_only_ns(Strategy& strategy, std::vector<void*>& blocks, std::size_t size) {
  strategy.begin_frame();
  const double start = monotonic_ns();
  for (auto& block : blocks) block = strategy.allocate(size, alignof(std::max_align_t));
  const double elapsed = monotonic_ns() - start;
  escape(blocks.data());
  strategy.end_frame(blocks);
  return elapsed / static_cast<double>(blocks.size());
}

// The three ways to get 1,000 blocks of 64 B, each timed as one frame (end untimed).
enum class batch_form { one_call_each, batch_api, contiguous };

// Nanoseconds of one batch of blocks.size() x 64 B in the given form.
template <class Strategy>
double batch_ns(Strategy& strategy, std::vector<void*>& blocks, batch_form form) {
  constexpr std::size_t size = 64;
  strategy.begin_frame();
  const double start = monotonic_ns();
  if (form == batch_form::one_call_each) {
    for (auto& block : blocks) block = strategy.allocate(size, alignof(std::max_align_t));
  } else if (form == batch_form::batch_api) {
    strategy.allocate_batch(size, blocks.size(), blocks.data());
  } else {
    blocks[0] = strategy.allocate(size * blocks.size(), 64);
  }
  const double elapsed = monotonic_ns() - start;
  escape(blocks.data());
  strategy.end_frame(form == batch_form::contiguous ? std::span<void* const>(blocks.data(), 1)
                                                    : std::span<void* const>(blocks));
  return elapsed;
}

// Nanoseconds of one whole frame: allocate every block, write its first byte, end it.
template <class Strategy>
double frame_ns(Strategy& strategy, const std::vector<std::size_t>& sizes,
                std::vector<void*>& blocks) {
  const double start = monotonic_ns();
  strategy.begin_frame();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i] = strategy.allocate(sizes[i], alignof(std::max_align_t));
    static_cast<char*>(blocks[i])[0] = 1;
  }
  strategy.end_frame(blocks);
  return monotonic_ns() - start;
}

}  // namespace

// Single sizes, batches and realistic frames; every strategy takes its turn within
// each repetition, batch after batch.
void frame_arena_frames(const run_settings& settings, recorder& out) {
  const int batches = settings.full ? 500 : 100;
  const int frames = settings.full ? 500 : 100;
  auto all = std::make_unique<frame_strategies>();
  std::vector<void*> blocks(1000);
  run_rounds(settings, [&](bool measured) {
    for (std::size_t size : {64, 256, 1024, 4096, 65536}) {
      for_each_frame_strategy(*all, [&](auto& strategy) {
        double total = 0;
        for (int batch = 0; batch < batches; ++batch) {
          total += allocation_only_ns(strategy, blocks, size);
        }
        if (measured) {
          out.add_for(std::string(strategy.name), size_label(size), "ns/allocation",
                      total / batches);
        }
      });
    }
    const std::pair<batch_form, const char*> forms[] = {
        {batch_form::one_call_each, "1,000 x 64 B, one call each"},
        {batch_form::batch_api, "1,000 x 64 B, batch API (separate blocks)"},
        {batch_form::contiguous, "1,000 x 64 B, one contiguous block"}};
    for (const auto& entry : forms) {
      const batch_form form = entry.first;
      const std::string label = entry.second;
      for_each_frame_strategy(*all, [&](auto& strategy) {
        if (form == batch_form::batch_api && !strategy.has_batch_api) return;
        double total = 0;
        for (int batch = 0; batch < batches; ++batch) total += batch_ns(strategy, blocks, form);
        if (measured) out.add_for(std::string(strategy.name), label, "ns/batch", total / batches);
      });
    }
    for (const frame_shape& shape : realistic_frames) {
      const std::vector<std::size_t> sizes = frame_sizes(shape);
      std::vector<void*> frame_blocks(sizes.size());
      for_each_frame_strategy(*all, [&](auto& strategy) {
        double total = 0;
        for (int frame = 0; frame < frames; ++frame) {
          total += frame_ns(strategy, sizes, frame_blocks);
        }
        if (measured) {
          out.add_for(std::string(strategy.name), shape.name, "µs/frame", total / frames / 1e3);
        }
      });
    }
  });
}

}  // namespace strata_bench
