// A misuse whose documented answer is one line and abort, run in a forked
// child so the fuzzer goes on: the child must die of SIGABRT having printed
// the line, within a few seconds (a hang is a failure too), never live on.
#ifndef STRATA_FUZZ_MISUSE_CHILD_HPP
#define STRATA_FUZZ_MISUSE_CHILD_HPP

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "shadow.hpp"

namespace strata::fuzz {

// Run `misuse` in a child whose stderr is a pipe; check how it ended.
template <class Misuse>
void expect_abort(const char* what, const char* line, Misuse misuse) {
  int pipe_ends[2];
  check(pipe(pipe_ends) == 0, "pipe failed");
  std::fflush(nullptr);
  pid_t child = fork();
  check(child >= 0, "fork failed");
  if (child == 0) {
    dup2(pipe_ends[1], STDERR_FILENO);
    close(pipe_ends[0]);
    signal(SIGABRT, SIG_DFL);  // libFuzzer's handler would turn the abort into an exit
    alarm(10);
    misuse();
    std::fprintf(stderr, "misuse accepted\n");
    _exit(0);
  }
  close(pipe_ends[1]);
  std::string said;
  char chunk[512];
  for (ssize_t n; (n = read(pipe_ends[0], chunk, sizeof chunk)) > 0;) said.append(chunk, n);
  close(pipe_ends[0]);
  int status = 0;
  check(waitpid(child, &status, 0) == child, "waitpid failed");
  bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  if (!aborted || said.find(line) == std::string::npos) {
    std::fprintf(stderr, "fuzz: %s: expected \"%s\" and abort; the child said:\n%s(status %d)\n",
                 what, line, said.c_str(), status);
    std::abort();
  }
}

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_MISUSE_CHILD_HPP
