// The purge thread: memory waiting in the segment caches, and memory freed into
// segments of exited threads, goes back to the OS once its purge delay has
// passed, even when every thread has stopped calling the allocator (a program
// that frees its peak and then idles).
#include <pthread.h>
#include <signal.h>
#include <atomic>

#include "heap/heap_internal.hpp"
#include "heap/stats_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

namespace {

enum purger_state : int { not_started, started, unavailable };
// Below this much committed memory the allocating threads' slow paths purge
// alone: a small program never pays for the thread (~0.1-0.2 MB of its peak
// RSS), and one that then idles keeps at most this much unpurged.
constexpr std::size_t min_committed_for_thread = std::size_t{4} << 20;
std::atomic<int> state{not_started};
std::atomic<std::uint32_t> wakeups{0};  // bumped when a deadline moves earlier; the thread
                                        // sleeps on it

// The earlier of two ms-clock deadlines, where 0 means none.
std::int64_t earlier(std::int64_t a, std::int64_t b) {
  if (a == 0) return b;
  return b == 0 || a < b ? a : b;
}

// Sleep until the next deadline of the segment cache or the abandoned segments,
// do the work that is due, repeat.
void* purge_main(void*) {
  for (;;) {
    // Read the wake-up count before the deadlines: a deadline set after this
    // read also changes the count, so the wait below returns at once.
    std::uint32_t seen = wakeups.load();
    std::int64_t next = earlier(segment_cache_deadline(), abandoned_deadline());
    std::int64_t now = clock_ms();
    if (next == 0) {
      os::wait_on(wakeups, seen, -1);
    } else if (now < next) {
      os::wait_on(wakeups, seen, next - now);
    } else {
      segment_cache_collect(false);
      abandoned_collect(false);
    }
  }
}

}  // namespace

void purger_start_if_needed() noexcept {
  if (state.load(std::memory_order_relaxed) != not_started) return;
  if (segment_cache_deadline() == 0 && abandoned_deadline() == 0) return;
  if (global_stats::committed.load(std::memory_order_relaxed) < min_committed_for_thread) return;
  int expected = not_started;
  if (!state.compare_exchange_strong(expected, started, std::memory_order_relaxed)) return;
  if (options::get(STRATA_OPTION_PURGE_THREAD) == 0 ||
      options::get(STRATA_OPTION_PURGE_DELAY_MS) <= 0) {
    state.store(unavailable, std::memory_order_relaxed);
    return;
  }
  register_fork_handlers();  // a fork while it holds a heap lock must not strand the child
  // The thread blocks every signal, so signals meant for the program never land on it.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  int error = pthread_create(&thread, &attr, purge_main, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error != 0) {  // the slow paths still purge when their deadlines pass
    state.store(unavailable, std::memory_order_relaxed);
    return;
  }
  pthread_setname_np(thread, "strata-purge");
}

void purger_wake() noexcept {
  wakeups.fetch_add(1);
  os::wake_all(wakeups);
}

bool purger_running() noexcept {
  return state.load(std::memory_order_relaxed) == started;
}

void purger_forget() noexcept {
  state.store(not_started, std::memory_order_relaxed);
}

}  // namespace strata::heap
