// What the misuse matrix's acts share: threads that act at the same instant,
// pointers no allocator of strata handed out, and the line a race prints when
// both of its frees were let through.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace strata_misuse {

// Run `work` on a thread of its own and wait for it.
inline void on_another_thread(const std::function<void()>& work) {
  std::thread(work).join();
}

// Run `first` and `second` on two threads released at the same instant (both
// spin until the other is ready), and wait for both.
inline void at_once(const std::function<void()>& first, const std::function<void()>& second) {
  std::atomic<int> ready{0};
  auto start = [&ready](const std::function<void()>& work) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    work();
  };
  std::thread a(start, first);
  std::thread b(start, second);
  a.join();
  b.join();
}

// Run `here` on this thread and `there` on another, released at the same
// instant once the other thread has run `prepare` (outside the race).
inline void at_once_with_this_thread(const std::function<void()>& here,
                                     const std::function<void()>& prepare,
                                     const std::function<void()>& there) {
  std::atomic<int> ready{0};
  std::thread other([&ready, &prepare, &there] {
    prepare();
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    there();
  });
  ready.fetch_add(1);
  while (ready.load() < 2) {
  }
  here();
  other.join();
}

// Reached when a race let two frees of one block through: said on stderr, so
// the test (expecting an abort) fails naming what happened.
inline void both_frees_accepted(const char* api) {
  std::fprintf(stderr, "misuse: %s accepted one block freed by two threads at once\n", api);
}

// A block of the C library's malloc: no strata allocator handed it out.
inline void* c_library_block() {
  return std::malloc(64);
}

// An address in static storage: no allocator handed it out (a few words, so
// that no compiler sees a checked free write past it).
inline void* static_address() {
  static long words[8];
  return words;
}

// `object` as the optimiser must take it: ended or not, what it holds is
// read from memory, so a call on an object after its destructor reaches the
// object's own check.
template <class T>
T* opaque(T* object) {
  asm volatile("" : "+r"(object) : : "memory");
  return object;
}

}  // namespace strata_misuse
