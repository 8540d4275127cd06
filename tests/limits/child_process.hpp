// Run a check in a forked child, so that what it does to the process (an
// address-space limit, an armed failure injection, a heap left exhausted)
// never reaches the test runner. The child reports through its exit code.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>

namespace strata_limits {

// Exit codes a child returns.
inline constexpr int child_ok = 0;
inline constexpr int child_failed = 1;

// Fail the child with a line naming the broken expectation.
#define LIMITS_CHECK(condition)                                                          \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      return ::strata_limits::child_failed;                                              \
    }                                                                                    \
  } while (0)

// Run `body` (returning an exit code) in a child process and wait for it: its
// exit code, or 128 + the signal that killed it (SIGALRM after `seconds`: a
// hang fails the test instead of stalling it). The child leaves with _exit,
// so nothing of the parent (gtest, static destructors) runs twice.
template <class Body>
int run_in_child(Body body, unsigned seconds = 120) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::alarm(seconds);
    int code = body();
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace strata_limits
