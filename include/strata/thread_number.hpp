// A small number for each thread (1, 2, ... in order of each thread's first
// call), which the tracking and logging adaptors record instead of an OS id.
#ifndef STRATA_THREAD_NUMBER_HPP
#define STRATA_THREAD_NUMBER_HPP

#include <atomic>
#include <cstdint>

namespace strata {

namespace detail {

// The next number to hand out; shared by every thread of the process.
inline std::atomic<std::uint32_t> next_thread_number{1};

// The calling thread's number; 0 until its first call to thread_number().
inline thread_local std::uint32_t this_thread_number = 0;

// Hand the calling thread its number: the slow path, once per thread.
[[gnu::cold, gnu::noinline]] inline std::uint32_t assign_thread_number() noexcept {
  this_thread_number = next_thread_number.fetch_add(1, std::memory_order_relaxed);
  return this_thread_number;
}

}  // namespace detail

// The calling thread's small number: one TLS load after the first call.
inline std::uint32_t thread_number() noexcept {
  const std::uint32_t number = detail::this_thread_number;
  return number != 0 ? number : detail::assign_thread_number();
}

}  // namespace strata

#endif  // STRATA_THREAD_NUMBER_HPP
