// strata-replay: replays an allocation trace (STRATA_TRACE, or the logging
// adaptor's log: the same format) against strata, glibc, mimalloc (2 and 3), jemalloc,
// tcmalloc and tbbmalloc, each in a fresh process of its own with the
// allocator preloaded, and prints time, peak RSS, peak live bytes and
// fragmentation side by side; optionally JSON and a PNG plot.
//
// The replay is single-threaded, in the trace's global time order: the same
// sequence of calls for every allocator, deterministic from run to run.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "byte_units.hpp"
#include "gpu_replay.hpp"
#include "install_layout.hpp"
#include "replay_plan.hpp"
#include "replay_worker.hpp"
#include "strata/trace_reader.hpp"

extern char** environ;

namespace {

using namespace strata_replay;

struct allocator {
  std::string name;
  std::string library;  // empty: the C library's own malloc
};

struct options {
  std::string trace;
  std::string plot;
  std::string json;
  std::string strata = default_strata_library();
  std::vector<std::string> only;
  int runs = 3;
};

struct measurement {
  allocator who;
  bool available = false;
  bool failed = false;
  std::vector<replay_result> runs;
  replay_result median;
};

// The allocators compared, where the system keeps their libraries; mimalloc 3,
// which Debian 12 does not package, where scripts/install-deps.sh mimalloc3 puts it.
std::vector<allocator> catalog(const options& o) {
  const std::string lib = STRATA_REPLAY_SYSTEM_LIBDIR "/";
  return {{"strata", o.strata},
          {"glibc", ""},
          {"mimalloc", lib + "libmimalloc.so.2"},
          {"mimalloc3", STRATA_REPLAY_MIMALLOC3_LIBRARY},
          {"jemalloc", lib + "libjemalloc.so.2"},
          {"tcmalloc", lib + "libtcmalloc_minimal.so.4"},
          {"tbbmalloc", lib + "libtbbmalloc_proxy.so.2"}};
}

// The usage text.
void usage(std::FILE* to) {
  std::fputs(
      "usage: strata-replay TRACE [options]\n"
      "       strata-replay --gpu TRACE [--device-memory 80GiB] [--config CONF]... (--help there)\n"
      "  --allocators a,b,...  replay against these only (strata, glibc, mimalloc,\n"
      "                        mimalloc3, jemalloc, tcmalloc, tbbmalloc; default all found)\n"
      "  --runs N              fresh processes per allocator, median shown (default 3)\n"
      "  --strata LIB          the strata override library to preload\n"
      "  --json FILE           write the results as JSON\n"
      "  --plot FILE.png       draw time and memory side by side (python3, matplotlib)\n",
      to);
}

// Splits "a,b,c".
std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The names of --allocators, each one strata-replay knows; exits with a message otherwise.
std::vector<std::string> allocator_names(const std::string& list) {
  std::vector<std::string> names = split(list);
  if (names.empty()) {
    std::fprintf(stderr, "strata-replay: --allocators needs at least one name\n");
    std::exit(2);
  }
  std::vector<allocator> known = catalog(options{});
  for (const std::string& name : names) {
    if (std::none_of(known.begin(), known.end(),
                     [&](const allocator& a) { return a.name == name; })) {
      std::fprintf(stderr,
                   "strata-replay: unknown allocator '%s' (known: strata, glibc, mimalloc, "
                   "mimalloc3, jemalloc, tcmalloc, tbbmalloc)\n",
                   name.c_str());
      std::exit(2);
    }
  }
  return names;
}

// The --runs value: a whole number from 1 to 1000; exits with a message otherwise.
int run_count(const std::string& text) {
  char* end = nullptr;
  long runs = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != 0 || runs < 1 || runs > 1000) {
    std::fprintf(stderr, "strata-replay: --runs takes a whole number from 1 to 1000, not '%s'\n",
                 text.c_str());
    std::exit(2);
  }
  return static_cast<int>(runs);
}

// Parses the command line; exits with usage on a mistake.
options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "strata-replay: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (arg == "--allocators") {
      o.only = allocator_names(value());
    } else if (arg == "--runs") {
      o.runs = run_count(value());
    } else if (arg == "--strata") {
      o.strata = value();
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--plot") {
      o.plot = value();
    } else if (arg.starts_with("--") || !o.trace.empty()) {
      usage(stderr);
      std::exit(2);
    } else {
      o.trace = arg;
    }
  }
  if (o.trace.empty()) {
    usage(stderr);
    std::exit(2);
  }
  return o;
}

// The plan's steps in an anonymous file the workers inherit and read.
int steps_file(const plan& p) {
  int fd = memfd_create("strata-replay-steps", 0);
  if (fd < 0) return -1;
  const char* data = reinterpret_cast<const char*>(p.steps.data());
  std::size_t left = p.steps.size() * sizeof(step);
  while (left > 0) {
    ssize_t w = write(fd, data, left);
    if (w <= 0) return -1;
    data += w;
    left -= static_cast<std::size_t>(w);
  }
  return fd;
}

// The worker's environment: ours without LD_PRELOAD or STRATA_TRACE, plus the
// allocator's library.
std::vector<std::string> worker_environment(const allocator& a) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 || std::strncmp(*e, "STRATA_TRACE=", 13) == 0)
      continue;
    env.emplace_back(*e);
  }
  if (!a.library.empty()) env.push_back("LD_PRELOAD=" + a.library);
  return env;
}

// One replay in a fresh process; false when the worker failed.
bool replay_once(const allocator& a, int fd, std::uint32_t slots, replay_result& out) {
  std::vector<std::string> env = worker_environment(a);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string fd_text = std::to_string(fd), slots_text = std::to_string(slots);
  char name[] = "strata-replay";
  char worker_flag[] = "--worker";
  char* argv[] = {name, worker_flag, fd_text.data(), slots_text.data(), nullptr};
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return false;
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string text;
  char chunk[256];
  ssize_t n;
  while ((n = read(pipe_fds[0], chunk, sizeof chunk)) > 0)
    text.append(chunk, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return false;
  unsigned long long v[4];
  if (std::sscanf(text.c_str(), "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]) != 4)
    return false;
  out = {v[0], v[1], v[2], v[3]};
  return true;
}

// The run with the median time.
replay_result median_run(std::vector<replay_result> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const replay_result& a, const replay_result& b) { return a.time_ns < b.time_ns; });
  return runs[runs.size() / 2];
}

// What the trace itself says, before any replay.
void print_trace_summary(const options& o, const plan& p) {
  std::printf(
      "trace %s: %llu records, %u thread%s, %.3f s recorded, replayed in time order on one "
      "thread\n",
      o.trace.c_str(), static_cast<unsigned long long>(p.records), p.threads,
      p.threads == 1 ? "" : "s", static_cast<double>(p.duration_ns) / 1e9);
  std::printf("peak live (from the trace): %s (%llu bytes); %llu blocks never freed\n",
              human_bytes(static_cast<double>(p.peak_live_bytes)).c_str(),
              static_cast<unsigned long long>(p.peak_live_bytes),
              static_cast<unsigned long long>(p.live_at_end));
  if (p.unknown_frees + p.implicit_frees + p.failed_calls != 0)
    std::printf(
        "not replayed: %llu frees/reallocs of blocks allocated before the trace began, %llu "
        "addresses reused with no free seen, %llu failed calls\n",
        static_cast<unsigned long long>(p.unknown_frees),
        static_cast<unsigned long long>(p.implicit_frees),
        static_cast<unsigned long long>(p.failed_calls));
}

// The side-by-side table.
void print_table(const std::vector<measurement>& results, const plan& p, int runs) {
  std::printf("\n| allocator | time | ns/call | peak RSS | peak live | RSS / live |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const measurement& m : results) {
    if (!m.available || m.failed) {
      std::printf("| %s | %s | | | | |\n", m.who.name.c_str(), m.available ? "failed" : "missing");
      continue;
    }
    const replay_result& r = m.median;
    double steps = static_cast<double>(std::max<std::size_t>(1, p.steps.size()));
    std::printf("| %s | %.3f s | %.1f | %s | %s | %.2f |\n", m.who.name.c_str(),
                static_cast<double>(r.time_ns) / 1e9, static_cast<double>(r.time_ns) / steps,
                human_bytes(static_cast<double>(r.peak_rss_bytes)).c_str(),
                human_bytes(static_cast<double>(r.peak_live_bytes)).c_str(),
                r.peak_live_bytes != 0
                    ? static_cast<double>(r.peak_rss_bytes) / static_cast<double>(r.peak_live_bytes)
                    : 0.0);
  }
  std::printf(
      "\nmedian of %d run%s (by time); peak RSS: resident memory the replay added above the "
      "process before its first call; RSS / live: fragmentation and allocator overhead\n",
      runs, runs == 1 ? "" : "s");
}

// The results as JSON, for the plot and for scripts.
bool write_json(const std::string& path, const options& o, const plan& p,
                const std::vector<measurement>& results) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "{\n  \"trace\": \"%s\",\n  \"records\": %llu,\n  \"steps\": %zu,\n",
               o.trace.c_str(), static_cast<unsigned long long>(p.records), p.steps.size());
  std::fprintf(
      f, "  \"threads\": %u,\n  \"trace_peak_live_bytes\": %llu,\n  \"unknown_frees\": %llu,\n",
      p.threads, static_cast<unsigned long long>(p.peak_live_bytes),
      static_cast<unsigned long long>(p.unknown_frees));
  std::fprintf(f, "  \"allocators\": [");
  bool first = true;
  for (const measurement& m : results) {
    if (!m.available || m.failed) continue;
    const replay_result& r = m.median;
    std::fprintf(f,
                 "%s\n    {\"name\": \"%s\", \"time_ns\": %llu, \"peak_rss_bytes\": %llu, "
                 "\"peak_live_bytes\": %llu, \"failures\": %llu}",
                 first ? "" : ",", m.who.name.c_str(), static_cast<unsigned long long>(r.time_ns),
                 static_cast<unsigned long long>(r.peak_rss_bytes),
                 static_cast<unsigned long long>(r.peak_live_bytes),
                 static_cast<unsigned long long>(r.failures));
    first = false;
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0;
}

// Runs the plot script with `python`; its exit code (3: no matplotlib there).
int run_plot_script(const char* python, const std::string& json, const std::string& png) {
  std::fflush(nullptr);
  std::string script = plot_script();
  pid_t pid = fork();
  if (pid == 0) {
    execlp(python, python, script.c_str(), json.c_str(), png.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
  return WEXITSTATUS(status);
}

// Draws the plot with $STRATA_REPLAY_PYTHON, else the first of python3 on the
// PATH and the system's python3 that has matplotlib.
bool draw_plot(const std::string& json, const std::string& png) {
  if (const char* chosen = std::getenv("STRATA_REPLAY_PYTHON"))
    return run_plot_script(chosen, json, png) == 0;
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    int code = run_plot_script(python, json, png);
    if (code == 0) return true;
    if (code != 3 && code != 127) return false;
  }
  return false;
}

// The parent: read, plan, replay each allocator in turns, report.
int run(const options& o) {
  std::vector<strata::trace::record> records;
  std::string error;
  if (!strata::trace::read_file(o.trace.c_str(), records, error)) {
    std::fprintf(stderr, "strata-replay: %s: %s\n", o.trace.c_str(), error.c_str());
    return 2;
  }
  plan p = make_plan(std::move(records));
  if (p.records == 0) {
    std::fprintf(stderr,
                 "strata-replay: %s holds no calls. A program started through a wrapper script "
                 "that execs it is not traced (STRATA_TRACE follows the process it starts with): "
                 "trace the program itself, or give STRATA_TRACE a path with %%p, which traces "
                 "every process into its own file\n",
                 o.trace.c_str());
    return 2;
  }
  print_trace_summary(o, p);
  std::fflush(stdout);
  int fd = steps_file(p);
  if (fd < 0) {
    std::perror("strata-replay: steps file");
    return 1;
  }
  std::vector<measurement> results;
  for (const allocator& a : catalog(o)) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), a.name) == o.only.end())
      continue;
    measurement m;
    m.who = a;
    m.available = a.library.empty() || access(a.library.c_str(), R_OK) == 0;
    results.push_back(m);
  }
  if (std::none_of(results.begin(), results.end(),
                   [](const measurement& m) { return m.available; })) {
    std::fprintf(stderr, "strata-replay: none of the allocators asked for is installed here\n");
    return 2;
  }
  // Passes: every allocator once per pass, so a slow phase falls on all alike.
  for (int pass = 0; pass < o.runs; ++pass) {
    for (measurement& m : results) {
      if (!m.available || m.failed) continue;
      replay_result r;
      if (replay_once(m.who, fd, p.slots, r))
        m.runs.push_back(r);
      else
        m.failed = true;
    }
  }
  bool all_ok = true;
  for (measurement& m : results) {
    if (m.available && !m.failed) m.median = median_run(m.runs);
    if (m.available && m.failed) {
      std::fprintf(stderr, "strata-replay: the %s replay failed\n", m.who.name.c_str());
      all_ok = false;
    }
  }
  print_table(results, p, o.runs);
  // Which override "strata" was: the installed one, the build tree's or --strata's.
  for (const measurement& m : results)
    if (m.who.name == "strata") std::printf("strata: %s\n", m.who.library.c_str());
  std::string json = o.json.empty() && !o.plot.empty() ? o.plot + ".json" : o.json;
  if (!json.empty() && !write_json(json, o, p, results)) {
    std::fprintf(stderr, "strata-replay: cannot write %s\n", json.c_str());
    return 1;
  }
  if (!o.plot.empty()) {
    if (!draw_plot(json, o.plot)) {
      std::fprintf(stderr,
                   "strata-replay: the plot failed (no python3 with matplotlib; set "
                   "STRATA_REPLAY_PYTHON)\n");
      return 1;
    }
    std::printf("plot: %s\n", o.plot.c_str());
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--gpu") == 0) return run_gpu(argc, argv);
  if (argc == 4 && std::strcmp(argv[1], "--worker") == 0)
    return run_worker(std::atoi(argv[2]),
                      static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  return run(parse_options(argc, argv));
}
