// Live heaps in a list under one lock; retired heaps live on as totals.
#include "heap/registry.hpp"

#include <mutex>

#include "os/mutex.hpp"

namespace strata::heap {
namespace {

os::mutex lock;
heap* first = nullptr;
std::uint64_t live_threads = 0;

struct totals {
  std::uint64_t mallocs[class_count + 1] = {};
  std::uint64_t frees[class_count + 1] = {};
  std::uint64_t cross_thread_frees = 0;
};
totals retired;

}  // namespace

void registry_add(heap* h) noexcept {
  std::lock_guard<os::mutex> guard(lock);
  h->prev_registered = nullptr;
  h->next_registered = first;
  if (first != nullptr) first->prev_registered = h;
  first = h;
  if (h == &h->context->main_heap) live_threads++;
}

void registry_remove(heap* h) noexcept {
  std::lock_guard<os::mutex> guard(lock);
  if (h->prev_registered != nullptr)
    h->prev_registered->next_registered = h->next_registered;
  else
    first = h->next_registered;
  if (h->next_registered != nullptr) h->next_registered->prev_registered = h->prev_registered;
  for (std::size_t c = 0; c <= class_count; ++c) {
    retired.mallocs[c] += h->counters.mallocs[c].get();
    retired.frees[c] += h->counters.frees[c].get();
  }
  retired.cross_thread_frees += h->counters.cross_thread_frees.get();
  if (h == &h->context->main_heap) live_threads--;
}

void registry_lock() noexcept {
  lock.lock();
}
void registry_unlock() noexcept {
  lock.unlock();
}

void registry_sum(strata_stats_t* out) noexcept {
  std::lock_guard<os::mutex> guard(lock);
  std::uint64_t mallocs[class_count + 1];
  std::uint64_t frees[class_count + 1];
  for (std::size_t c = 0; c <= class_count; ++c) {
    mallocs[c] = retired.mallocs[c];
    frees[c] = retired.frees[c];
  }
  out->cross_thread_frees = retired.cross_thread_frees;
  for (heap* h = first; h != nullptr; h = h->next_registered) {
    for (std::size_t c = 0; c <= class_count; ++c) {
      mallocs[c] += h->counters.mallocs[c].get();
      frees[c] += h->counters.frees[c].get();
    }
    out->cross_thread_frees += h->counters.cross_thread_frees.get();
  }
  out->in_use = 0;
  out->mallocs = out->frees = 0;
  for (std::size_t c = 0; c < class_count; ++c) {
    out->class_mallocs[c] = mallocs[c];
    out->class_frees[c] = frees[c];
    // Counters of different threads are read at slightly different moments.
    if (mallocs[c] > frees[c]) out->in_use += (mallocs[c] - frees[c]) * class_block_size(c);
  }
  for (std::size_t c = 0; c <= class_count; ++c) {
    out->mallocs += mallocs[c];
    out->frees += frees[c];
  }
  out->threads = live_threads;
}

}  // namespace strata::heap
