// The seed 003's ways of serving a session's 256-byte messages, behind one shape so a
// workload is written once and instantiated for each: strata's session heap, a
// std::pmr::monotonic_buffer_resource over a buffer (strategy A), a
// std::pmr::unsynchronized_pool_resource, a mimalloc heap (strategy C's heap) and
// plain malloc. Each is a template argument, so the timed calls are inlined as a user
// would write them; none goes through a virtual call it would not otherwise make.
#pragma once

#include <strata/session_heap.hpp>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "mimalloc_heap.hpp"

namespace strata_bench {

inline constexpr std::size_t session_message_bytes = 256;
inline constexpr std::size_t session_message_alignment = 8;

// strata's session heap: a bump in a buffer from a private strata heap; the heap
// serves what overflows; destroy() frees it all.
class session_heap_strategy {
 public:
  static constexpr std::string_view name = "strata session_heap";
  static constexpr bool frees_from_any_thread = true;
  explicit session_heap_strategy(std::size_t buffer_bytes) : session_(buffer_bytes) {}
  bool usable() const { return true; }
  void* allocate() { return session_.allocate(session_message_bytes, session_message_alignment); }
  void deallocate(void* p) {
    session_.deallocate(p, session_message_bytes, session_message_alignment);
  }
  // The next burst starts at the front of the buffer (no message may be in use).
  void start_over(std::span<void* const>) { session_.rewind_buffer(); }
  // The session ends: buffer, overflow blocks and heap go in one call.
  void end(std::span<void* const>) { session_.destroy(); }

 private:
  strata::session_heap session_;
};

// std::pmr::monotonic_buffer_resource over a buffer from malloc, with operator new
// behind it for what overflows.
class monotonic_strategy {
 public:
  static constexpr std::string_view name = "pmr::monotonic";
  static constexpr bool frees_from_any_thread = false;
  explicit monotonic_strategy(std::size_t buffer_bytes)
      : buffer_(new char[buffer_bytes]), resource_(buffer_, buffer_bytes) {}
  ~monotonic_strategy() { delete[] buffer_; }
  monotonic_strategy(const monotonic_strategy&) = delete;
  monotonic_strategy& operator=(const monotonic_strategy&) = delete;
  bool usable() const { return true; }
  void* allocate() { return resource_.allocate(session_message_bytes, session_message_alignment); }
  void deallocate(void* p) {
    resource_.deallocate(p, session_message_bytes, session_message_alignment);
  }
  void start_over(std::span<void* const>) { resource_.release(); }
  // The session ends: the resource gives its overflow back and the buffer is freed.
  void end(std::span<void* const>) {
    resource_.release();
    delete[] buffer_;
    buffer_ = nullptr;
  }

 private:
  char* buffer_;
  std::pmr::monotonic_buffer_resource resource_;
};

// std::pmr::unsynchronized_pool_resource over operator new (the buffer size is unused).
class pool_resource_strategy {
 public:
  static constexpr std::string_view name = "pmr::unsynchronized_pool";
  static constexpr bool frees_from_any_thread = false;
  explicit pool_resource_strategy(std::size_t) {}
  bool usable() const { return true; }
  void* allocate() { return pool_.allocate(session_message_bytes, session_message_alignment); }
  void deallocate(void* p) {
    pool_.deallocate(p, session_message_bytes, session_message_alignment);
  }
  // Every message goes back to the pool, which keeps its chunks for the next burst.
  void start_over(std::span<void* const> blocks) {
    for (void* block : blocks) deallocate(block);
  }
  void end(std::span<void* const>) { pool_.release(); }

 private:
  std::pmr::unsynchronized_pool_resource pool_;
};

// A mimalloc heap of its own (mi_heap_new); mi_heap_destroy ends the session.
class mimalloc_heap_strategy {
 public:
  static constexpr std::string_view name = "mimalloc heap";
  static constexpr bool frees_from_any_thread = true;
  explicit mimalloc_heap_strategy(std::size_t)
      : heap_(mimalloc_heap_available() ? mimalloc_heap_api().heap_new() : nullptr) {}
  ~mimalloc_heap_strategy() {
    if (heap_ != nullptr) mimalloc_heap_api().heap_destroy(heap_);
  }
  mimalloc_heap_strategy(const mimalloc_heap_strategy&) = delete;
  mimalloc_heap_strategy& operator=(const mimalloc_heap_strategy&) = delete;
  bool usable() const { return heap_ != nullptr; }
  void* allocate() { return mimalloc_heap_api().heap_malloc(heap_, session_message_bytes); }
  void deallocate(void* p) { mimalloc_heap_api().free(p); }
  void start_over(std::span<void* const> blocks) {
    for (void* block : blocks) deallocate(block);
  }
  void end(std::span<void* const>) {
    mimalloc_heap_api().heap_destroy(heap_);
    heap_ = nullptr;
  }

 private:
  void* heap_;
};

// The process's malloc: every message freed one by one.
class malloc_strategy {
 public:
  static constexpr std::string_view name = "malloc";
  static constexpr bool frees_from_any_thread = true;
  explicit malloc_strategy(std::size_t) {}
  bool usable() const { return true; }
  void* allocate() { return std::malloc(session_message_bytes); }
  void deallocate(void* p) { std::free(p); }
  void start_over(std::span<void* const> blocks) {
    for (void* block : blocks) deallocate(block);
  }
  void end(std::span<void* const> blocks) { start_over(blocks); }
};

// Every strategy, strata's first, each over a buffer of `buffer_bytes` where it has one.
using session_strategies =
    std::tuple<session_heap_strategy, monotonic_strategy, pool_resource_strategy,
               mimalloc_heap_strategy, malloc_strategy>;

// Calls `body(strategy)` for each usable strategy of `all`, in order.
template <class Body>
void for_each_strategy(session_strategies& all, Body&& body) {
  std::apply([&](auto&... strategy) { ((strategy.usable() ? body(strategy) : void()), ...); }, all);
}

// Calls `body(type_tag)` once per strategy type, for workloads that make a new
// session each time (the tag is a null pointer of that type).
template <class Body>
void for_each_strategy_type(Body&& body) {
  std::apply([&](auto... tag) { (body(tag), ...); },
             std::tuple<session_heap_strategy*, monotonic_strategy*, pool_resource_strategy*,
                        mimalloc_heap_strategy*, malloc_strategy*>{});
}

// The name of a strategy as a std::string key for the recorder.
template <class Strategy>
std::string strategy_name() {
  return std::string(Strategy::name);
}

}  // namespace strata_bench
