// The purge thread: memory waiting in the segment caches goes back to the OS
// once its purge delay has passed, even when every thread has stopped calling
// the allocator (a program that frees its peak and then idles).
#include <pthread.h>
#include <signal.h>
#include <atomic>

#include "heap/heap_internal.hpp"
#include "options/options.hpp"

namespace strata::heap {

namespace {

enum purger_state : int { not_started, started, unavailable };
std::atomic<int> state{not_started};

void* purge_main(void*) {
  segment_cache_purge_forever();
}

}  // namespace

void purger_start_if_needed() noexcept {
  if (state.load(std::memory_order_relaxed) != not_started || !segment_cache_pending()) return;
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

bool purger_running() noexcept {
  return state.load(std::memory_order_relaxed) == started;
}

void purger_forget() noexcept {
  state.store(not_started, std::memory_order_relaxed);
}

}  // namespace strata::heap
