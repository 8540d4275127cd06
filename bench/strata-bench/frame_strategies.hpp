// The seed 004's ways of serving a frame's allocations, behind one shape so a workload
// is written once and instantiated for each: strata's frame allocator in its default
// mode (tags and byte counts) and minimal mode (none), std::pmr::monotonic_buffer_resource,
// a plain bump arena and plain malloc. A frame is begin_frame(), allocations, end_frame().
#pragma once

#include <strata/frame.hpp>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <span>
#include <string_view>
#include <tuple>

#include "bump_arena.hpp"

namespace strata_bench {

// Room for the largest frame of the scenarios (1,000 x 64 KB), for the strategies
// with one fixed buffer; memory they never write is never faulted in.
inline constexpr std::size_t frame_buffer_bytes = 80u << 20;

// strata's frame allocator; Config picks default or minimal mode. One allocator serves
// every thread (each finds its own arena), as a program would use it.
template <strata::frame_config Config>
class frame_allocator_strategy {
 public:
  static constexpr std::string_view name =
      Config.statistics ? "strata frame_allocator" : "strata frame_allocator (minimal)";
  static constexpr bool shared_by_threads = true;
  static constexpr bool bumps_one_buffer = true;
  static constexpr bool has_batch_api = true;
  void begin_frame() { frames_.begin_frame(); }
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return frames_.allocate(bytes, alignment);
  }
  // The batch API: `count` separate blocks of `size` bytes in one call.
  void allocate_batch(std::size_t size, std::size_t count, void** out) {
    frames_.allocate_batch(size, count, out);
  }
  void end_frame(std::span<void* const>) { frames_.end_frame(); }

 private:
  strata::frame_allocator<strata::malloc_resource, Config> frames_;
};

using frame_default_strategy = frame_allocator_strategy<strata::frame_config{}>;
using frame_minimal_strategy = frame_allocator_strategy<strata::frame_config{.statistics = false}>;

// std::pmr::monotonic_buffer_resource over a buffer from malloc (operator new behind
// it); release() at the end of each frame.
class frame_monotonic_strategy {
 public:
  static constexpr std::string_view name = "pmr::monotonic";
  static constexpr bool shared_by_threads = false;
  static constexpr bool bumps_one_buffer = true;
  static constexpr bool has_batch_api = false;
  frame_monotonic_strategy()
      : buffer_(new char[frame_buffer_bytes]), resource_(buffer_.get(), frame_buffer_bytes) {}
  void begin_frame() {}
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return resource_.allocate(bytes, alignment);
  }
  void allocate_batch(std::size_t, std::size_t, void**) {}
  void end_frame(std::span<void* const>) { resource_.release(); }

 private:
  std::unique_ptr<char[]> buffer_;
  std::pmr::monotonic_buffer_resource resource_;
};

// The plain bump arena.
class frame_bump_strategy {
 public:
  static constexpr std::string_view name = "bump arena";
  static constexpr bool shared_by_threads = false;
  static constexpr bool bumps_one_buffer = true;
  static constexpr bool has_batch_api = false;
  void begin_frame() {}
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return arena_.allocate(bytes, alignment);
  }
  void allocate_batch(std::size_t, std::size_t, void**) {}
  void end_frame(std::span<void* const>) { arena_.reset(); }

 private:
  bump_arena arena_{frame_buffer_bytes};
};

// The process's malloc: every block freed at the end of the frame.
class frame_malloc_strategy {
 public:
  static constexpr std::string_view name = "malloc";
  static constexpr bool shared_by_threads = false;
  static constexpr bool bumps_one_buffer = false;
  static constexpr bool has_batch_api = false;
  void begin_frame() {}
  void* allocate(std::size_t bytes, std::size_t) { return std::malloc(bytes); }
  void allocate_batch(std::size_t, std::size_t, void**) {}
  void end_frame(std::span<void* const> blocks) {
    for (void* block : blocks) std::free(block);
  }
};

// Every strategy, strata's first.
using frame_strategies =
    std::tuple<frame_default_strategy, frame_minimal_strategy, frame_monotonic_strategy,
               frame_bump_strategy, frame_malloc_strategy>;

// Calls `body(strategy)` for each strategy of `all`, in order.
template <class Body>
void for_each_frame_strategy(frame_strategies& all, Body&& body) {
  std::apply([&](auto&... strategy) { (body(strategy), ...); }, all);
}

}  // namespace strata_bench
