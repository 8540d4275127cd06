// The CPU allocator facade (seed 000's "XSigma CPU allocator"): one thread-safe
// object whose backend is chosen at start-up, with statistics and memory-
// pressure monitoring on top.
//
// Backends: the strata heap, the C library, or mimalloc or tbbmalloc when the
// process can load them (dlopen of libmimalloc.so.2 / libtbbmalloc.so.2, then
// mi_malloc_aligned and mi_free / scalable_aligned_malloc and
// scalable_aligned_free). The choice is cpu_allocator_options::backend, or when
// that is unset the environment variable STRATA_CPU_BACKEND
// (strata|libc|mimalloc|tbbmalloc), or else strata. A backend that cannot be
// loaded, or an unknown name, falls back to strata, and fallback_reason() says
// why. The backend stays fixed for the object's life.
//
// Statistics: statistics<backend, atomic counters> (see statistics.hpp).
// Pressure: a memory_pressure monitor (see memory_pressure.hpp) polled on the
// allocation slow path, every `poll_every_bytes` bytes allocated (0: never),
// by explicit poll(), and by its background thread once pressure().start().
// watch_bytes_in_use() adds a threshold on this allocator's bytes in use.
//
// Zero-byte requests are valid (each backend is asked for 1 byte); an alignment
// that is not a power of two throws std::invalid_argument; failure throws
// std::bad_alloc.
#ifndef STRATA_CPU_ALLOCATOR_HPP
#define STRATA_CPU_ALLOCATOR_HPP

#include <strata/cpu_backend.hpp>
#include <strata/memory_pressure.hpp>
#include <strata/resource.hpp>
#include <strata/statistics.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace strata {

struct cpu_allocator_options {
  std::optional<cpu_backend> backend;      // unset: STRATA_CPU_BACKEND, else strata
  std::size_t poll_every_bytes = 1 << 20;  // pressure poll period in bytes allocated
};

// The facade's upstream: a loaded backend as a host resource.
class cpu_backend_resource {
 public:
  explicit cpu_backend_resource(cpu_backend_functions functions) noexcept : functions_(functions) {}

  // Allocate from the backend; throws std::bad_alloc on failure.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    void* p = functions_.allocate(bytes == 0 ? 1 : bytes, alignment);
    if (p == nullptr) [[unlikely]]
      detail::throw_bad_alloc();
    return p;
  }
  // Return a block to the backend.
  void deallocate(void* p, std::size_t, std::size_t = default_alignment) noexcept {
    functions_.free(p);
  }
  bool is_equal(const cpu_backend_resource& other) const noexcept {
    return functions_.free == other.functions_.free;
  }
  const cpu_backend_functions& functions() const noexcept { return functions_; }

 private:
  cpu_backend_functions functions_;
};

class cpu_allocator {
 public:
  explicit cpu_allocator(cpu_allocator_options options = {})
      : stats_(cpu_backend_resource(options.backend ? load_cpu_backend(*options.backend)
                                                    : load_configured_cpu_backend())),
        poll_every_(static_cast<std::int64_t>(options.poll_every_bytes)),
        until_poll_(poll_every_) {}
  cpu_allocator(const cpu_allocator&) = delete;
  cpu_allocator& operator=(const cpu_allocator&) = delete;

  // Allocate from the backend, counting it; poll for pressure every
  // poll_every_bytes allocated.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    void* p = stats_.allocate(bytes, alignment);
    if (poll_every_ > 0 &&
        until_poll_.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed) <=
            static_cast<std::int64_t>(bytes)) [[unlikely]]
      poll_slow();
    return p;
  }
  // Return a block to the backend.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    stats_.deallocate(p, bytes, alignment);
  }
  bool is_equal(const cpu_allocator& other) const noexcept { return this == &other; }

  cpu_backend backend() const noexcept { return stats_.upstream().functions().backend; }
  // Why the backend is not the one configured; null when it is.
  const char* fallback_reason() const noexcept {
    return stats_.upstream().functions().fallback_reason;
  }

  statistics_snapshot statistics() const noexcept { return stats_.snapshot(); }
  void reset_peak() noexcept { stats_.reset_peak(); }
  std::uint64_t bytes_in_use() const noexcept { return stats_.bytes_in_use(); }

  memory_pressure& pressure() noexcept { return pressure_; }
  // Call back when this allocator's bytes in use reach `bytes`.
  std::size_t watch_bytes_in_use(std::size_t bytes, pressure_callback callback) {
    return pressure_.add_threshold([this] { return static_cast<std::size_t>(bytes_in_use()); },
                                   bytes, std::move(callback));
  }
  // Check every threshold now; returns how many fired.
  std::size_t poll() { return pressure_.poll(); }

 private:
  // Re-arm the byte countdown and poll: the allocation slow path.
  [[gnu::cold, gnu::noinline]] void poll_slow() {
    until_poll_.store(poll_every_, std::memory_order_relaxed);
    pressure_.poll();
  }

  strata::statistics<cpu_backend_resource, true> stats_;
  memory_pressure pressure_;
  std::int64_t poll_every_;
  std::atomic<std::int64_t> until_poll_;
};

}  // namespace strata

#endif  // STRATA_CPU_ALLOCATOR_HPP
