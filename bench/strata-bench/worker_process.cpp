#include "worker_process.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "cycle_clock.hpp"

extern char** environ;

namespace strata_bench {

namespace {

// This process's environment with LD_PRELOAD replaced by `preload` (or removed).
std::vector<std::string> worker_environment(const std::string& preload) {
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "LD_PRELOAD=", 11) != 0) variables.emplace_back(*entry);
  }
  if (!preload.empty()) variables.push_back("LD_PRELOAD=" + preload);
  return variables;
}

// Pointers into strings, null-terminated, as exec wants them.
std::vector<char*> as_argv(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Splits complete lines off the front of `pending`, handing each to `on_line`.
void take_lines(std::string& pending, const std::function<void(const std::string&)>& on_line) {
  for (std::size_t end; (end = pending.find('\n')) != std::string::npos;) {
    on_line(pending.substr(0, end));
    pending.erase(0, end + 1);
  }
}

// Describes a wait() status that is not a clean exit.
std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

worker_outcome run_worker(const std::string& executable, const std::vector<std::string>& arguments,
                          const std::string& preload, double timeout_seconds,
                          const std::function<void(const std::string&)>& on_start) {
  worker_outcome outcome;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    outcome.failure = "pipe() failed";
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);

  std::vector<std::string> argv_strings{executable};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<std::string> env_strings = worker_environment(preload);
  std::vector<char*> argv = as_argv(argv_strings);
  std::vector<char*> envp = as_argv(env_strings);
  pid_t child = 0;
  const int spawned =
      posix_spawn(&child, executable.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    outcome.failure = std::string("cannot start worker: ") + std::strerror(spawned);
    return outcome;
  }

  std::string out_pending, err_text;
  const auto on_line = [&](const std::string& line) {
    if (line.rfind("# start ", 0) == 0) {
      on_start(line.substr(8));
    } else if (!line.empty() && line.front() == '{') {
      outcome.json_lines.push_back(line);
    }
  };
  const double deadline = monotonic_ns() + timeout_seconds * 1e9;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  bool timed_out = false;
  for (int open_fds = 2; open_fds > 0;) {
    const double left_ms = (deadline - monotonic_ns()) / 1e6;
    if (left_ms <= 0) {
      timed_out = true;
      kill(child, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left_ms) + 1) < 0) continue;
    for (auto& fd : fds) {
      if (fd.fd < 0 || fd.revents == 0) continue;
      char chunk[65536];
      const ssize_t got = read(fd.fd, chunk, sizeof chunk);
      if (got <= 0) {
        close(fd.fd);
        fd.fd = -1;
        --open_fds;
        continue;
      }
      if (&fd == &fds[0]) {
        out_pending.append(chunk, static_cast<std::size_t>(got));
        take_lines(out_pending, on_line);
      } else {
        err_text.append(chunk, static_cast<std::size_t>(got));
        if (err_text.size() > 8192) err_text.erase(0, err_text.size() - 4096);
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  waitpid(child, &status, 0);
  outcome.stderr_tail = err_text.size() > 2000 ? err_text.substr(err_text.size() - 2000) : err_text;
  if (timed_out) {
    outcome.failure = "timed out after " + std::to_string(static_cast<int>(timeout_seconds)) + " s";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    outcome.succeeded = true;
  } else {
    outcome.failure = describe_status(status);
  }
  return outcome;
}

}  // namespace strata_bench
