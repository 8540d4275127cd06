// Frame-pointer walk (see frames.hpp).
#include "stack/frames.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace strata::stack {

namespace {

// The largest frame the walk believes: a bigger step up is a register that
// held something else than a frame pointer.
constexpr std::uintptr_t max_frame_bytes = std::uintptr_t{1} << 20;

// The calling thread's kernel id once asked for (guarded slots record one at
// every allocation and free: a system call each saved), 0 before.
thread_local std::uint32_t kept_thread_id = 0;

// A forked child runs on a thread of its own id.
void forget_kernel_thread_id() {
  kept_thread_id = 0;
}

// strata's executable segment when it is a shared library; empty otherwise.
std::uintptr_t own_begin = 0;
std::uintptr_t own_end = 0;

// The executable segment of the object loaded at `base` (dl_iterate_phdr's visitor).
int find_segment(dl_phdr_info* info, std::size_t, void* base) {
  if (reinterpret_cast<void*>(info->dlpi_addr) != base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
      own_begin = info->dlpi_addr + ph.p_vaddr;
      own_end = own_begin + ph.p_memsz;
    }
  }
  return 1;
}

}  // namespace

void start() noexcept {
  pthread_atfork(nullptr, nullptr, forget_kernel_thread_id);
  Dl_info own, program;
  if (dladdr(reinterpret_cast<void*>(&capture), &own) == 0) return;
  if (dladdr(reinterpret_cast<void*>(getauxval(AT_ENTRY)), &program) != 0 &&
      program.dli_fbase == own.dli_fbase)
    return;  // linked into the program: only `skip` says which frames are strata's
  dl_iterate_phdr(find_segment, own.dli_fbase);
}

// Each frame holds the caller's frame pointer and the return address above it;
// a next frame must lie above this one, within max_frame_bytes, 8-aligned.
__attribute__((noinline)) void capture(frames& out, std::size_t skip) noexcept {
  auto* fp = static_cast<std::uintptr_t*>(__builtin_frame_address(0));
  out.count = 0;
  while (fp != nullptr && out.count < max_frames) {
    auto pc = fp[1];
    auto* next = reinterpret_cast<std::uintptr_t*>(fp[0]);
    auto here = reinterpret_cast<std::uintptr_t>(fp);
    // (No test of pc against the frame's address: a thread's stack is mapped
    // right below the shared libraries, so their code lies close to it.)
    if (pc < 4096) break;
    if (skip > 0)
      --skip;
    else if (out.count > 0 || pc - own_begin >= own_end - own_begin)
      out.pc[out.count++] = reinterpret_cast<void*>(pc);
    auto there = reinterpret_cast<std::uintptr_t>(next);
    if (there <= here || there - here > max_frame_bytes || (there & 7) != 0) break;
    fp = next;
  }
}

std::uint32_t kernel_thread_id() noexcept {
  if (kept_thread_id == 0) kept_thread_id = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  return kept_thread_id;
}

}  // namespace strata::stack
