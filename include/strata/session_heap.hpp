// strata session heap: a private first-class strata heap, and a monotonic arena
// over an initial buffer taken from it. Blocks come from the buffer by a bump;
// when it is used up they come from the heap, so the session never throws
// while the heap can grow. destroy() frees everything in one call.
//
//   strata::session_heap session(1 << 20);
//   void* msg = session.allocate(256);        // a bump in the buffer
//   session.deallocate(msg, 256);             // no-op for buffer blocks
//   session.destroy();                        // buffer and overflow blocks, all at once
//
// A session belongs to the thread that creates it (its heap does): that thread
// allocates; any thread may free. Sessions are isolated: destroying one never
// touches another's memory. Use after destroy() aborts with a diagnostic.
#ifndef STRATA_SESSION_HEAP_HPP
#define STRATA_SESSION_HEAP_HPP

#include <strata/strata.h>
#include <strata/arena.hpp>
#include <strata/resource.hpp>
#include <strata/thread_number.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory_resource>

namespace strata {

class session_heap final : public std::pmr::memory_resource {
  static constexpr arena_config arena_settings{.statistics = false, .checked = false};
  using arena_type = monotonic_arena<heap_resource, arena_settings>;

 public:
  // A session whose first `initial_bytes` are bump-allocated; std::bad_alloc
  // if the heap or its buffer cannot be had. Buffers under 4 KiB are rounded up.
  explicit session_heap(std::size_t initial_bytes = 1024 * 1024)
      : heap_(new_heap()),
        buffer_(take_buffer(heap_, buffer_size(initial_bytes))),
        buffer_end_(buffer_ + buffer_size(initial_bytes)),
        arena_(buffer_, buffer_size(initial_bytes), arena_options{}, heap_resource(heap_)),
        owner_(&detail::this_thread_number) {}

  session_heap(const session_heap&) = delete;
  session_heap& operator=(const session_heap&) = delete;

  // Destroys the session if destroy() was not called.
  ~session_heap() override {
    if (heap_ != nullptr) destroy();
  }

  // A block of `bytes` aligned to `alignment`: a bump in the buffer, else a
  // block of the session's heap. Hides memory_resource::allocate, which
  // std::pmr containers reach through do_allocate.
  [[nodiscard, gnu::always_inline]] void* allocate(std::size_t bytes,
                                                   std::size_t alignment = default_alignment) {
    if (!is_valid_alignment(alignment)) [[unlikely]]
      detail::throw_bad_alignment(alignment);
    check_owner("session_heap::allocate");
    if (void* block = arena_.try_allocate(bytes, alignment)) [[likely]]
      return block;
    return allocate_overflow(bytes, alignment);
  }

  // Free one block: in the buffer a no-op (the tools are told the block's
  // `bytes` are dead), else a free into the heap, from any thread, where a
  // foreign pointer or a double free is the heap's to report.
  void deallocate(void* p, std::size_t bytes = 0,
                  [[maybe_unused]] std::size_t alignment = default_alignment) {
    if (heap_ == nullptr) [[unlikely]]
      detail::report_misuse("use of a destroyed session_heap", "session_heap::deallocate", p);
    if (in_buffer(p)) {
      annotate_released(
          p, std::min(bytes, static_cast<std::size_t>(buffer_end_ - static_cast<char*>(p))));
      return;
    }
    bytes == 0 ? strata_free(p) : strata_free_sized(p, bytes);
  }

  // Start the buffer over, for the next burst: every block bumped from it so far
  // is freed at once (none may be in use); heap blocks are untouched.
  void rewind_buffer() {
    if (heap_ == nullptr) [[unlikely]]
      detail::report_misuse("use of a destroyed session_heap", "session_heap::rewind_buffer", this);
    check_owner("session_heap::rewind_buffer");
    arena_.reset(retention::keep_everything);
  }

  // Free the buffer and every overflow block at once, and the heap itself.
  void destroy() {
    if (heap_ == nullptr) [[unlikely]]
      detail::report_misuse("use of a destroyed session_heap", "session_heap::destroy", this);
    check_owner("session_heap::destroy");
    arena_.release();  // the tools forget the buffer before the heap frees it
    strata_heap_destroy(heap_);
    heap_ = nullptr;
  }

  bool destroyed() const noexcept { return heap_ == nullptr; }
  // Whether `p` lies in the bump-allocated buffer.
  bool in_buffer(const void* p) const noexcept {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    return address >= reinterpret_cast<std::uintptr_t>(buffer_) &&
           address < reinterpret_cast<std::uintptr_t>(buffer_end_);
  }
  std::size_t buffer_bytes_left() const noexcept { return arena_.bytes_left_in_chunk(); }
  std::size_t overflow_allocations() const noexcept { return overflow_allocations_; }
  strata_heap_t* heap() const noexcept { return heap_; }

 private:
  // Abort unless the calling thread made the session: its buffer is bumped with
  // no lock. One compare of the owner word with the address of a thread-local.
  [[gnu::always_inline]] void check_owner(const char* where) const {
    if (owner_ != &detail::this_thread_number) [[unlikely]]
      detail::report_misuse("session_heap used from a thread that does not own it", where, this);
  }

  // The buffer is full: a block of the session's own heap.
  [[gnu::noinline]] void* allocate_overflow(std::size_t bytes, std::size_t alignment) {
    if (heap_ == nullptr)
      detail::report_misuse("use of a destroyed session_heap", "session_heap::allocate", this);
    void* block = strata_heap_malloc_aligned(heap_, bytes, alignment);
    if (block == nullptr) detail::throw_bad_alloc();
    ++overflow_allocations_;
    return block;
  }

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  static constexpr std::size_t buffer_size(std::size_t initial_bytes) noexcept {
    return initial_bytes < 4096 ? 4096 : initial_bytes;
  }

  static strata_heap_t* new_heap() {
    strata_heap_t* heap = strata_heap_new();
    if (heap == nullptr) detail::throw_bad_alloc();
    return heap;
  }

  // The initial buffer, from the heap; the heap is destroyed if it cannot be had.
  static char* take_buffer(strata_heap_t* heap, std::size_t bytes) {
    void* buffer = strata_heap_malloc_aligned(heap, bytes, 64);
    if (buffer == nullptr) {
      strata_heap_destroy(heap);
      detail::throw_bad_alloc();
    }
    return static_cast<char*>(buffer);
  }

  strata_heap_t* heap_;
  char* buffer_;
  char* buffer_end_;
  arena_type arena_;
  const std::uint32_t* owner_;  // the creating thread's this_thread_number: its address is its own
  std::size_t overflow_allocations_ = 0;
};

}  // namespace strata

#endif  // STRATA_SESSION_HEAP_HPP
