// The OS layer: the only place strata talks to the kernel about memory.
// Every call returns null/false on failure and records why in last_failure();
// nothing here aborts, allocates from the heap, or includes other strata code.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::os {

// Why the most recent failing OS call on this thread failed.
struct failure {
  const char* call;  // "reserve", "commit", ...; null when nothing failed yet
  int error;         // errno value (ENOMEM, EINVAL, ...); ECANCELED for an injected failure
};

// How purge() gives memory back: MADV_DONTNEED drops it at once (RSS falls
// immediately), MADV_FREE lets the kernel take it lazily under pressure.
enum class purge_mode { dont_need, lazy_free };

std::size_t page_size() noexcept;
std::size_t huge_page_size() noexcept;
// Whether the kernel backs every anonymous mapping with transparent huge pages
// (mode "always"), not only the ranges hinted with hint_huge_pages().
bool huge_pages_always() noexcept;

// Reserve `size` bytes of address space whose start is a multiple of
// `alignment` (a power of two, at least the page size). With `accessible`
// the range is readable/writable and committed on first touch (Linux overcommit);
// without it the range is PROT_NONE until commit(). Needs no more than `size`
// bytes of address space at once unless the free gaps around an exact-size
// mapping are taken (then size + alignment), so it works under a tight RLIMIT_AS.
void* reserve_aligned(std::size_t size, std::size_t alignment, bool accessible) noexcept;
bool release(void* p, std::size_t size) noexcept;
// Map `size` readable/writable bytes at `at` exactly (to grow a mapping that
// ends there); null when something is mapped in the range (last_failure()
// says EEXIST) or the OS refuses (ENOMEM: an address-space limit, say).
void* reserve_at(void* at, std::size_t size) noexcept;

// Make a reserved range usable / give its memory back and make it inaccessible.
bool commit(void* p, std::size_t size) noexcept;
bool decommit(void* p, std::size_t size) noexcept;

// Give the physical memory behind a range back while keeping it mapped; the
// range reads back as zero (dont_need) or as either old contents or zero (lazy_free).
bool purge(void* p, std::size_t size, purge_mode mode) noexcept;

// Guard pages: make a range inaccessible, or accessible again.
bool protect(void* p, std::size_t size) noexcept;
bool unprotect(void* p, std::size_t size) noexcept;

// Ask the kernel to back a range with transparent huge pages.
bool hint_huge_pages(void* p, std::size_t size) noexcept;

// Try to grow a mapping in place (no move); false when the next range is taken.
bool extend_in_place(void* p, std::size_t old_size, std::size_t new_size) noexcept;

// Move a mapping to a new range of `new_size` bytes aligned to `alignment`,
// its pages carried over rather than copied (the old range is gone); null on failure.
void* move_aligned(void* p, std::size_t old_size, std::size_t new_size,
                   std::size_t alignment) noexcept;

// Resident set size of this process now, and its peak, in bytes.
std::size_t current_rss() noexcept;
std::size_t peak_rss() noexcept;

failure last_failure() noexcept;

// Sleep until `word` no longer holds `expected` (after a wake_all on it) or
// `timeout_ms` passes (negative: no limit); may also return early for no reason.
// A bare futex: no destructor, and nothing to rebuild in a forked child.
void wait_on(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
             std::int64_t timeout_ms) noexcept;
// Wake every thread sleeping in wait_on(word).
void wake_all(std::atomic<std::uint32_t>& word) noexcept;

// Number of memory calls made to the kernel so far (for statistics).
std::uint64_t call_count() noexcept;

// Failure injection for tests: the nth memory call from now (1 = the next) fails
// with ECANCELED. 0 disarms.
void inject_failure(std::uint64_t nth) noexcept;

// A cheap, unique, non-zero id of the calling thread (its TCB address).
inline std::uintptr_t thread_id() noexcept {
#if defined(__x86_64__)
  std::uintptr_t tid;
  __asm__("movq %%fs:0, %0" : "=r"(tid));
  return tid;
#elif defined(__aarch64__)
  std::uintptr_t tid;
  __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tid));
  return tid;
#else
  static thread_local char anchor;
  return reinterpret_cast<std::uintptr_t>(&anchor);
#endif
}

}  // namespace strata::os
