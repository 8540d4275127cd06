// strata resources: the host-resource concept every strata allocator is generic
// over, the upstreams it ships (malloc, operator new, the strata heap), and the
// one type-erased wrapper that is also a std::pmr::memory_resource.
//
// Errors (the C++ API): running out of memory, or a size that overflows, throws
// std::bad_alloc (std::bad_array_new_length for overflow); an alignment that is
// not a power of two throws std::invalid_argument. Detected misuse (stale mark,
// block freed into the wrong pool, use of a destroyed session) prints one line
// naming what and where, then aborts.
#ifndef STRATA_RESOURCE_HPP
#define STRATA_RESOURCE_HPP

#include <strata/strata.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_HAS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(STRATA_HAS_ASAN)
#define STRATA_HAS_ASAN 1
#endif
#ifdef STRATA_HAS_ASAN
#include <sanitizer/asan_interface.h>
#endif

// Valgrind annotations cost a few instructions per allocation, so by default
// they are compiled into debug builds only; define STRATA_VALGRIND=1 for more.
#if !defined(STRATA_VALGRIND) && !defined(NDEBUG) && __has_include(<valgrind/memcheck.h>)
#define STRATA_VALGRIND 1
#endif
#if defined(STRATA_VALGRIND) && STRATA_VALGRIND
#include <valgrind/memcheck.h>
#endif

namespace strata {

// ---- the concept -----------------------------------------------------------

// A host resource hands out and takes back blocks of host memory. Blocks are
// returned with the size and alignment they were allocated with.
template <class R>
concept host_resource = requires(R& r, const R& cr, void* p, std::size_t n, std::size_t a) {
  { r.allocate(n, a) } -> std::same_as<void*>;
  r.deallocate(p, n, a);
  { cr.is_equal(cr) } -> std::convertible_to<bool>;
};

// A host resource that can hand cached memory back to the operating system now.
template <class R>
concept releasing_resource = host_resource<R> && requires(R& r) {
  r.release_unused();
};

inline constexpr std::size_t default_alignment = alignof(std::max_align_t);

// ---- errors ----------------------------------------------------------------

namespace detail {

// Print "strata: <what> in <where> (address <p>)" on stderr, then abort.
[[noreturn]] __attribute__((visibility("default"), cold)) void report_misuse(
    const char* what, const char* where, const void* address) noexcept;

// The word an allocator (a pool, a slab, bfc, buddy) knows it is alive by. Its
// destructor checks it (a second destructor call aborts) and clears it; slow
// paths and the failure branches of checks may read it, so a call on a
// destroyed allocator is reported as such. No fast path reads it.
class lifetime_word {
 public:
  // Read as memory holds it, after the owner's destructor too.
  bool alive() const noexcept {
    return *static_cast<const volatile std::uint64_t*>(&word_) == alive_value;
  }
  // The owner's destructor begins: abort with `what` if it ran before.
  void end(const char* what, const char* where, const void* owner) noexcept {
    if (!alive()) [[unlikely]]
      report_misuse(what, where, owner);
    *static_cast<volatile std::uint64_t*>(&word_) = 0;  // volatile: the object is ending
  }

 private:
  static constexpr std::uint64_t alive_value = 0x4C4F4F50455649u;
  std::uint64_t word_ = alive_value;
};

// Throw the exception for an alignment that is not a power of two.
[[noreturn]] __attribute__((cold, noinline)) inline void throw_bad_alignment(
    std::size_t alignment) {
  throw std::invalid_argument("strata: alignment " + std::to_string(alignment) +
                              " is not a power of two");
}

// Throw the exception for a size that does not fit in memory.
[[noreturn]] __attribute__((cold, noinline)) inline void throw_bad_alloc() {
  throw std::bad_alloc();
}

// Throw the exception for a count * size that overflows.
[[noreturn]] __attribute__((cold, noinline)) inline void throw_bad_array_length() {
  throw std::bad_array_new_length();
}

// Construct a T in `storage`: with parentheses when T has such a constructor,
// else with braces (aggregates; clang 14 lacks parenthesised aggregate init).
template <class T, class... Args>
T* construct_in(void* storage, Args&&... args) {
  if constexpr (std::is_constructible_v<T, Args...>)
    return ::new (storage) T(std::forward<Args>(args)...);
  else
    return ::new (storage) T{std::forward<Args>(args)...};
}

}  // namespace detail

// True when `alignment` is a power of two.
constexpr bool is_valid_alignment(std::size_t alignment) noexcept {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

// Throw std::invalid_argument unless `alignment` is a power of two.
inline void check_alignment(std::size_t alignment) {
  if (!is_valid_alignment(alignment)) [[unlikely]]
    detail::throw_bad_alignment(alignment);
}

// count * size, throwing std::bad_array_new_length when it overflows.
inline std::size_t checked_multiply(std::size_t count, std::size_t size) {
  std::size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) [[unlikely]]
    detail::throw_bad_array_length();
  return bytes;
}

// Round `value` up to a multiple of the power of two `alignment`.
constexpr std::uintptr_t align_up(std::uintptr_t value, std::size_t alignment) noexcept {
  return (value + alignment - 1) & ~static_cast<std::uintptr_t>(alignment - 1);
}

#ifdef NDEBUG
inline constexpr bool debug_build = false;
#else
inline constexpr bool debug_build = true;
#endif

// ---- tool annotations ------------------------------------------------------

// Tell AddressSanitizer and valgrind that [p, p + bytes) is now a live block.
inline void annotate_allocated([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#ifdef STRATA_HAS_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#endif
#if defined(STRATA_VALGRIND) && STRATA_VALGRIND
  VALGRIND_MAKE_MEM_UNDEFINED(p, bytes);
#endif
}

// Tell the tools that [p, p + bytes) holds no live block: any access is an error.
inline void annotate_released([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#ifdef STRATA_HAS_ASAN
  ASAN_POISON_MEMORY_REGION(p, bytes);
#endif
#if defined(STRATA_VALGRIND) && STRATA_VALGRIND
  VALGRIND_MAKE_MEM_NOACCESS(p, bytes);
#endif
}

// ---- upstreams -------------------------------------------------------------

// The C library: malloc for ordinary alignments, aligned_alloc above them.
struct malloc_resource {
  // Allocate `bytes` aligned to `alignment`; throws std::bad_alloc on failure,
  // and for a size that rounding up to the alignment would wrap to a small one.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    if (bytes > SIZE_MAX - alignment) [[unlikely]]
      detail::throw_bad_alloc();
    void* p = alignment <= default_alignment
                  ? std::malloc(bytes)
                  : std::aligned_alloc(alignment, align_up(bytes, alignment));
    if (p == nullptr) detail::throw_bad_alloc();
    return p;
  }
  // Return a block to the C library.
  void deallocate(void* p, std::size_t, std::size_t = default_alignment) noexcept { std::free(p); }
  bool is_equal(const malloc_resource&) const noexcept { return true; }
};

// Global operator new and delete, with their aligned forms.
struct new_delete_resource {
  // Allocate through ::operator new; throws std::bad_alloc on failure.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    return ::operator new (bytes, std::align_val_t{alignment});
  }
  // Return a block through the matching ::operator delete.
  void deallocate(void* p, std::size_t, std::size_t alignment = default_alignment) noexcept {
    ::operator delete (p, std::align_val_t{alignment});
  }
  bool is_equal(const new_delete_resource&) const noexcept { return true; }
};

// The strata heap: the calling thread's default heap, or one first-class heap.
class heap_resource {
 public:
  // Over the default heap of whichever thread allocates.
  heap_resource() noexcept = default;
  // Over a first-class heap; only its creating thread may allocate from it.
  explicit heap_resource(strata_heap_t* heap) noexcept : heap_(heap) {}

  // Allocate from the heap; throws std::bad_alloc on failure.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    void* p = heap_ == nullptr ? strata_malloc_aligned(bytes, alignment)
                               : strata_heap_malloc_aligned(heap_, bytes, alignment);
    if (p == nullptr) detail::throw_bad_alloc();
    return p;
  }
  // Free a block; any thread may free blocks of any heap.
  void deallocate(void* p, std::size_t bytes, std::size_t = default_alignment) noexcept {
    strata_free_sized(p, bytes);
  }
  bool is_equal(const heap_resource& other) const noexcept { return heap_ == other.heap_; }
  // Give cached pages back to the operating system now.
  void release_unused() noexcept { strata_collect(1); }
  strata_heap_t* heap() const noexcept { return heap_; }

 private:
  strata_heap_t* heap_ = nullptr;
};

// A typed, non-owning reference to a resource, so several allocators can share
// one upstream (which must then outlive them, and be thread-safe if they are).
template <host_resource R>
class upstream_ref {
 public:
  explicit upstream_ref(R& resource) noexcept : resource_(&resource) {}

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return resource_->allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    resource_->deallocate(p, bytes, alignment);
  }
  bool is_equal(const upstream_ref& other) const noexcept {
    return resource_ == other.resource_ || resource_->is_equal(*other.resource_);
  }
  // Forward the release to the referenced resource when it can do one.
  void release_unused() requires releasing_resource<R> { resource_->release_unused(); }
  R& get() const noexcept { return *resource_; }

 private:
  R* resource_;
};

// Any std::pmr::memory_resource as a strata upstream (non-owning; the resource
// must outlive it). The alignment is checked first, since a pmr resource given
// one that is not a power of two has undefined behaviour.
class pmr_upstream {
 public:
  explicit pmr_upstream(std::pmr::memory_resource& resource) noexcept : resource_(&resource) {}

  // Allocate from the pmr resource; throws what it throws (std::bad_alloc).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    return resource_->allocate(bytes, alignment);
  }
  // Free into the pmr resource.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    resource_->deallocate(p, bytes, alignment);
  }
  bool is_equal(const pmr_upstream& other) const noexcept {
    return resource_->is_equal(*other.resource_);
  }
  std::pmr::memory_resource& get() const noexcept { return *resource_; }

 private:
  std::pmr::memory_resource* resource_;
};

// ---- the type-erased wrapper -----------------------------------------------

// A non-owning, type-erased reference to any host resource, which is itself a
// std::pmr::memory_resource: the runtime-choice face of every strata allocator.
// The referenced resource must outlive the wrapper.
class resource_ref final : public std::pmr::memory_resource {
 public:
  template <host_resource R>
  requires(!std::same_as<R, resource_ref>) explicit resource_ref(R& resource) noexcept
      : object_(&resource), operations_(&operations_for<R>) {}

  resource_ref(const resource_ref&) noexcept = default;
  resource_ref& operator=(const resource_ref&) noexcept = default;

  // The referenced object, when its type is R; null otherwise.
  template <host_resource R>
  R* target() const noexcept {
    return operations_ == &operations_for<R> ? static_cast<R*>(object_) : nullptr;
  }

 private:
  // What the wrapper needs of the referenced type, as a table of functions.
  struct operations {
    void* (*allocate)(void* object, std::size_t bytes, std::size_t alignment);
    void (*deallocate)(void* object, void* p, std::size_t bytes, std::size_t alignment);
    bool (*equal)(const void* object, const void* other);
  };

  template <host_resource R>
  static constexpr operations operations_for{
      [](void* object, std::size_t bytes, std::size_t alignment) -> void* {
        return static_cast<R*>(object)->allocate(bytes, alignment);
      },
      [](void* object, void* p, std::size_t bytes, std::size_t alignment) {
        static_cast<R*>(object)->deallocate(p, bytes, alignment);
      },
      [](const void* object, const void* other) -> bool {
        return static_cast<bool>(
            static_cast<const R*>(object)->is_equal(*static_cast<const R*>(other)));
      }};

  // Allocate from the referenced resource.
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return operations_->allocate(object_, bytes, alignment);
  }
  // Free into the referenced resource.
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    operations_->deallocate(object_, p, bytes, alignment);
  }
  // Equal when both reference equal resources of the same type.
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    if (this == &other) return true;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
    const auto* ref = dynamic_cast<const resource_ref*>(&other);
    return ref != nullptr && ref->operations_ == operations_ &&
           (ref->object_ == object_ || operations_->equal(object_, ref->object_));
#else
    return false;
#endif
  }

  void* object_;
  const operations* operations_;
};

}  // namespace strata

#endif  // STRATA_RESOURCE_HPP
