// A program that hands free() a block of one of strata's arenas, as one that
// mixes its allocators up would. Run under the malloc override, the heap must
// abort with a report that says the pointer is an arena's (arena_free.sh).
//
// Usage: arena_free arena|frame|session
#include <strata/arena.hpp>
#include <strata/frame.hpp>
#include <strata/session_heap.hpp>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  std::string kind = argc > 1 ? argv[1] : "";
  if (kind == "arena") {
    strata::monotonic_arena<> arena;
    std::free(arena.allocate(64));
  } else if (kind == "frame") {
    strata::frame_allocator<> frames;
    frames.begin_frame();
    std::free(frames.allocate(64));
  } else if (kind == "session") {
    strata::session_heap session(1 << 20);
    std::free(session.allocate(64));
  }
  return 1;  // free() took the block without a word
}
