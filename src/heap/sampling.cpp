// The sampling hook (see sampling.hpp): per-thread countdowns and the
// dispatch to the guarded region and the heap profiler.
#include "heap/sampling.hpp"

#include <strata/detail/poisson_sampler.hpp>

#include <climits>
#include <ctime>

#include "guarded/region.hpp"
#include "heap/sampled_stats.hpp"
#include "options/options.hpp"
#include "profile/profiler.hpp"
#include "stack/frames.hpp"

namespace strata::heap {

namespace {

// What the entry countdown counts to: nothing (it is set out of reach), the
// next guarded draw (guarded sampling alone: the countdown is its own), or
// every allocation (the profiler's countdown is in bytes, and the trace
// recorder records each one); or, until the first thread has set the samplers
// up, the next allocation. Set once (a forked child keeps it); the trace
// recorder may ask for every_call before.
enum class hook_mode : unsigned char { not_started, off, guarded, every_call };
std::atomic<hook_mode> mode{hook_mode::not_started};
bool trace_forced = false;  // the trace recorder asked for every allocation

// Per thread: allocations left until the next guarded one and bytes left until
// the next profiled one (each drawn when it goes below 0), a random draw's
// state, whether the thread has drawn its first gaps, and whether it is inside
// a sampler (its own allocations are never sampled).
struct sampling_thread {
  long guarded_left = 0;
  long bytes_left = 0;
  std::uint64_t random = 0;
  std::uint64_t guarded_next_ns = 0;  // no guarded draw before (STRATA_GUARDED_MAX_COST)
  bool started = false;
  bool busy = false;
};

constinit thread_local sampling_thread tls_sampling __attribute__((tls_model(STRATA_TLS_MODEL)));

long guarded_rate = 0;      // 0: off
long guarded_max_cost = 0;  // per mille of a thread's time; 0: no limit
bool profiling = false;
// STRATA_PROFILE_SEED, and the threads that took a seed from it so far.
std::uint64_t seed = 0;
std::atomic<std::uint64_t> seeded_threads{0};

// A thread's first random state: from STRATA_PROFILE_SEED and the thread's
// order of arrival when set (reproducible runs), else from its id.
std::uint64_t first_random() noexcept {
  return detail::sampler_state(seed != 0 ? seed + seeded_threads.fetch_add(1) * 0x9e3779b97f4a7c15
                                         : os::thread_id() * 0x9e3779b97f4a7c15);
}

// The shared xorshift (detail/poisson_sampler.hpp): no lock, no system call.
std::uint64_t next_random(sampling_thread& t) noexcept {
  return detail::sampler_next(t.random);
}

// Allocations before the next guarded one: uniform from 0 to 2 * rate - 2, so
// one in guarded_rate on average is drawn; out of reach when off.
long guarded_gap(sampling_thread& t) noexcept {
  if (guarded_rate == 0) return LONG_MAX;
  if (guarded_rate == 1) return 0;
  return static_cast<long>(next_random(t) % static_cast<std::uint64_t>(2 * guarded_rate - 1));
}

// Bytes before the next profiled allocation; out of reach when off.
long profile_gap(sampling_thread& t) noexcept {
  return profiling ? profile::next_gap(next_random(t)) : LONG_MAX;
}

// Nanoseconds on the monotonic clock (the vDSO's: no system call).
std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Guarded work (a draw, a free: two mprotect calls, a stack walk) from `start`
// to now, charged to the thread: under STRATA_GUARDED_MAX_COST its next draw
// waits until that work is no more than the allowed share of its time, so a
// program that allocates fast is sampled less often rather than slowed.
void charge_guarded(sampling_thread& t, std::uint64_t start) noexcept {
  if (guarded_max_cost == 0) return;
  std::uint64_t spent = monotonic_ns() - start;
  std::uint64_t from = t.guarded_next_ns > start ? t.guarded_next_ns : start;
  t.guarded_next_ns = from + spent * 1000 / static_cast<std::uint64_t>(guarded_max_cost);
}

// A guarded block for a drawn allocation, when the thread's cost allows one
// and it fits a slot; else null.
void* allocate_guarded(sampling_thread& t, std::size_t size, std::size_t alignment) noexcept {
  if (size > guarded::slot_bytes) return nullptr;
  std::uint64_t start = guarded_max_cost != 0 ? monotonic_ns() : 0;
  if (start < t.guarded_next_ns) return nullptr;
  void* p = guarded::allocate(size, alignment);  // null for an alignment above a page
  if (p != nullptr) sampled_stats_malloc(size, 0);
  charge_guarded(t, start);
  return p;
}

// A countdown ran out on this allocation (`alignment` a power of two): a
// profiled block when the byte countdown did (first, so the profile stays
// unbiased), else a guarded one when it fits a slot, else null; each spent
// countdown drawn again. A thread's first allocation draws both gaps, then
// counts itself against them. A block handed out is counted in the statistics.
void* sample(sampling_thread& t, std::size_t size, std::size_t alignment) noexcept {
  if (!t.started) {
    t.started = true;
    t.random = first_random();
    t.guarded_left = guarded_gap(t) - 1;
    t.bytes_left = profile_gap(t) - static_cast<long>(size);
  }
  void* p = nullptr;
  if (t.bytes_left < 0) {
    t.bytes_left = profile_gap(t);
    // A mapping aligned to the segment size serves any alignment up to it.
    if (profiling && size > 0 && alignment <= segment_size) {
      p = profile::allocate(size);
      if (p != nullptr) sampled_stats_malloc(size, profile::mapped_bytes(size));
    }
  }
  if (t.guarded_left < 0) {
    t.guarded_left = guarded_gap(t);
    if (p == nullptr && guarded_rate != 0) p = allocate_guarded(t, size, alignment);
  }
  return p;
}

// Count an allocation that ran the entry countdown out against the samplers'
// own countdowns: true when this one is drawn (always a thread's first, which
// draws its first gaps). While every allocation comes here the entry countdown
// is left below 0 (malloc_drawn sets it to 0 at each draw, far from wrapping).
// While nothing samples a thread still looks again every 2^20 allocations: the
// trace recorder may start after the first thread set the samplers up.
bool count_sampled(sampling_thread& t, std::size_t size) noexcept {
  hook_mode now = mode.load(std::memory_order_acquire);
  if (STRATA_LIKELY(now == hook_mode::every_call)) {
    long guarded_left = --t.guarded_left;
    long bytes_left = t.bytes_left -= static_cast<long>(size);
    return (guarded_left | bytes_left) < 0;
  }
  if (now == hook_mode::guarded) {  // the entry countdown was the guarded one
    if (t.started) t.guarded_left = -1;
    return true;
  }
  tls_entry.sample_countdown = now == hook_mode::off ? long{1} << 20 : 0;
  return false;
}

// The allocation a countdown ran out on, never one of a sampler's own; an
// alignment of 0 is malloc's. With guarded sampling alone the entry countdown
// then runs to the next draw (or to the next allocation, when a sampler was
// busy and this draw passed).
__attribute__((noinline, cold)) void* malloc_drawn(heap* h, std::size_t size,
                                                   std::size_t alignment) noexcept {
  sampling_thread& t = tls_sampling;
  void* p = nullptr;
  if (!t.busy) {
    t.busy = true;
    p = sample(t, size, alignment < 16 ? 16 : alignment);
    t.busy = false;
  }
  bool guarded_alone = mode.load(std::memory_order_relaxed) == hook_mode::guarded;
  tls_entry.sample_countdown = guarded_alone ? t.guarded_left : 0;
  if (p != nullptr) return p;
  return alignment == 0 ? heap_malloc(h, size) : heap_malloc_aligned(h, size, alignment);
}

}  // namespace

void sampling_start() noexcept {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  seed = static_cast<std::uint64_t>(options::get(STRATA_OPTION_PROFILE_SEED));
  long rate = options::get(STRATA_OPTION_GUARDED_SAMPLE_RATE);
  if (rate > 0 &&
      guarded::start(static_cast<std::size_t>(options::get(STRATA_OPTION_GUARDED_MAX_SLOTS)),
                     static_cast<unsigned>(options::get(STRATA_OPTION_GUARDED_UNDERFLOW_PERCENT)),
                     segment_size)) {
    guarded_rate = rate;
    guarded_max_cost = options::get(STRATA_OPTION_GUARDED_MAX_COST);
    sampled_stats_reserve(guarded::region_bytes());
  }
  profiling = profile::start(segment_size);
  // Only a sampler walks stacks: a process without one never touches the
  // dynamic linker's tables (their pages count in a small program's peak RSS).
  if (guarded_rate != 0 || profiling) stack::start();
  hook_mode chosen = profiling || trace_forced ? hook_mode::every_call
                     : guarded_rate != 0       ? hook_mode::guarded
                                               : hook_mode::off;
  mode.store(chosen, std::memory_order_release);
  tls_entry.sample_countdown = 0;  // this thread may have counted before
}

void sampling_force_on() noexcept {
  trace_forced = true;
  if (mode.load(std::memory_order_relaxed) != hook_mode::not_started)
    mode.store(hook_mode::every_call, std::memory_order_release);
  tls_entry.sample_countdown = 0;
}

void* malloc_sampled(heap* h, std::size_t size) noexcept {
  if (STRATA_LIKELY(!count_sampled(tls_sampling, size))) return heap_malloc(h, size);
  return malloc_drawn(h, size, 0);
}

// A bad alignment is never drawn, so heap_malloc_aligned gives it its usual answer.
void* malloc_aligned_sampled(heap* h, std::size_t size, std::size_t alignment) noexcept {
  bool valid = alignment != 0 && (alignment & (alignment - 1)) == 0;
  if (STRATA_LIKELY(!count_sampled(tls_sampling, size)) || !valid)
    return heap_malloc_aligned(h, size, alignment);
  return malloc_drawn(h, size, alignment);
}

std::size_t sampled_usable_size(const void* p) noexcept {
  if (guarded::owns(p)) return guarded::usable_size(p);
  if (profiling) return profile::usable_size(p);
  return 0;
}

bool sampled_free(void* p) noexcept {
  bool other_thread = false;
  if (guarded::owns(p)) {
    std::uint64_t start = guarded_max_cost != 0 ? monotonic_ns() : 0;
    std::size_t size = guarded::release(p, &other_thread);
    sampled_stats_free(size, 0, other_thread);
    charge_guarded(tls_sampling, start);
    return true;
  }
  std::size_t size = profiling ? profile::release(p, &other_thread) : 0;
  if (size == 0) return false;
  sampled_stats_free(size, profile::mapped_bytes(size), other_thread);
  return true;
}

}  // namespace strata::heap
