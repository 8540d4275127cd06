// The sampling hook (see sampling.hpp): per-thread countdowns and the
// dispatch to the guarded region.
#include "heap/sampling.hpp"

#include <climits>

#include "guarded/region.hpp"
#include "options/options.hpp"
#include "stack/frames.hpp"

namespace strata::heap {

bool sampling_enabled = false;

namespace {

// Per thread: allocations left until the next guarded one, a random draw's
// state, and whether the thread is inside a sampler (its own allocations are
// never sampled).
struct sampling_thread {
  long guarded_left = 0;
  std::uint64_t random = 0;
  bool busy = false;
};

constinit thread_local sampling_thread tls_sampling __attribute__((tls_model(STRATA_TLS_MODEL)));

long guarded_rate = 0;  // 0: off

// xorshift seeded from the thread's id: no lock, no system call.
std::uint64_t next_random(sampling_thread& t) noexcept {
  if (t.random == 0) t.random = os::thread_id() * 0x9e3779b97f4a7c15 | 1;
  std::uint64_t x = t.random;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return t.random = x;
}

// About one allocation in guarded_rate: a gap drawn uniformly from 1 to
// 2 * rate - 1, whose mean is the rate.
long guarded_gap(sampling_thread& t) noexcept {
  if (guarded_rate <= 1) return 1;
  return 1 + static_cast<long>(next_random(t) % static_cast<std::uint64_t>(2 * guarded_rate - 1));
}

// The countdown ran out (or the thread's first allocation, at 0 - 1): a
// guarded block when drawn and it fits a slot, else null; the next gap drawn.
// Without guarded sampling (the hook on for the trace recorder) the countdown
// is set out of reach.
void* guarded_when_drawn(sampling_thread& t, std::size_t size) noexcept {
  if (guarded_rate == 0) {
    t.guarded_left = LONG_MAX;
    return nullptr;
  }
  bool drawn = t.guarded_left == 0 || guarded_rate == 1;
  t.guarded_left = guarded_gap(t);
  if (!drawn || size > guarded::slot_bytes) return nullptr;
  return guarded::allocate(size, 16);
}

// The allocation the countdown ran out on, never one of a sampler's own.
__attribute__((noinline, cold)) void* malloc_drawn(heap* h, std::size_t size) noexcept {
  sampling_thread& t = tls_sampling;
  if (!t.busy) {
    t.busy = true;
    void* p = guarded_when_drawn(t, size);
    t.busy = false;
    if (p != nullptr) return p;
  }
  return heap_malloc(h, size);
}

}  // namespace

void sampling_start() noexcept {
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return;
  stack::find_own_code();
  long rate = options::get(STRATA_OPTION_GUARDED_SAMPLE_RATE);
  if (rate > 0 &&
      guarded::start(static_cast<std::size_t>(options::get(STRATA_OPTION_GUARDED_MAX_SLOTS)),
                     static_cast<unsigned>(options::get(STRATA_OPTION_GUARDED_UNDERFLOW_PERCENT)),
                     segment_size)) {
    guarded_rate = rate;
    sampling_enabled = true;
  }
}

void sampling_force_on() noexcept {
  sampling_enabled = true;
}

// One decrement, then the heap; the drawn allocation takes malloc_drawn.
void* malloc_sampled(heap* h, std::size_t size) noexcept {
  if (STRATA_LIKELY(--tls_sampling.guarded_left > 0)) return heap_malloc(h, size);
  return malloc_drawn(h, size);
}

std::size_t sampled_usable_size(const void* p) noexcept {
  if (guarded::owns(p)) return guarded::usable_size(p);
  return 0;
}

bool sampled_free(void* p) noexcept {
  if (guarded::owns(p)) {
    guarded::release(p);
    return true;
  }
  return false;
}

}  // namespace strata::heap
