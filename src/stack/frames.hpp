// Call stacks for the sampled allocations: captured by walking frame pointers,
// which never allocates, takes no lock and costs a few loads per frame, and
// written out (for fault and leak reports) without allocating either.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::stack {

// The deepest stack a sample keeps.
inline constexpr std::size_t max_frames = 32;

struct frames {
  std::uint32_t count = 0;
  void* pc[max_frames];
};

// The return addresses of the caller's stack, innermost first, `skip` frames
// of the capturing code left out, and after them any frame in strata's own
// shared library (the entry points above the sampler). The walk stops at a
// frame pointer that does not lead up the stack: code built without frame
// pointers ends it early. strata's files on the sampled path keep frame
// pointers (CMakeLists.txt), its other entry points reach them by a jump.
void capture(frames& out, std::size_t skip) noexcept;

// Called once, before the first capture: find strata's own code when it is a
// shared library of its own (a static link leaves the range empty), and have a
// forked child's thread forget the kernel id it kept.
void start() noexcept;

// The thread's kernel id (what gdb and /proc show), for reports: a system call
// the first time a thread asks, kept after that.
std::uint32_t kernel_thread_id() noexcept;

}  // namespace strata::stack
