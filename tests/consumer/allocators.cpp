// Uses one of each of strata's C++ allocators through an installed copy: the
// headers together (tracking.hpp and pool.hpp once clashed), the C++20 the
// targets carry (the project asks for no standard), and the library the
// header templates call into (their misuse reports live in libstrata).
#include <strata/allocator.hpp>
#include <strata/arena.hpp>
#include <strata/bfc.hpp>
#include <strata/buddy.hpp>
#include <strata/frame.hpp>
#include <strata/pool.hpp>
#include <strata/session_heap.hpp>
#include <strata/statistics.hpp>
#include <strata/synchronized.hpp>
#include <strata/tracking.hpp>

#include <cstdio>
#include <memory_resource>
#include <vector>

namespace {

struct particle {
  float position[3];
  float velocity[3];
};

// Frame memory for a few frames, pooled objects across them.
bool frames_work() {
  strata::frame_allocator<> frames;
  for (int frame = 0; frame < 3; ++frame) {
    frames.begin_frame();
    auto particles = frames.allocate_array<particle>(1000);
    particles[999] = particle{};
    frames.end_frame();
  }
  void* kept = frames.pool_allocate(48);
  frames.pool_deallocate(kept);
  return true;
}

// The other allocators, each once.
bool allocators_work() {
  strata::monotonic_arena<> arena;
  strata::resource_ref as_pmr(arena);
  std::pmr::vector<int> numbers(&as_pmr);
  numbers.assign(1000, 7);

  strata::session_heap session(64 * 1024);
  void* message = session.allocate(256);
  session.deallocate(message, 256);

  strata::object_pool<particle> pool;
  particle* p = pool.create();
  pool.destroy(p);

  strata::bfc<> best_fit;
  best_fit.deallocate(best_fit.allocate(1000), 1000);
  strata::buddy<> buddy({.total_bytes = 1 << 20, .min_block = 64});
  buddy.deallocate(buddy.allocate(3000), 3000);

  strata::statistics<strata::tracking<strata::heap_resource, true, 0, strata::no_lock>> counted;
  strata::allocator<int, decltype(counted)> counting(counted);
  std::vector<int, decltype(counting)> values(100, 1, counting);
  bool counted_right = counted.snapshot().bytes_in_use == 100 * sizeof(int);
  strata::synchronized<strata::heap_resource> shared;
  shared.deallocate(shared.allocate(64), 64);
  return numbers[999] == 7 && counted_right;
}

}  // namespace

int main() {
  bool ok = frames_work() && allocators_work();
  std::printf("consumer: strata's allocators %s\n", ok ? "work" : "FAILED");
  return ok ? 0 : 1;
}
