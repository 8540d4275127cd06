// Writing profiles out (see dump.hpp): a mapped scratch area per dump, the
// table's lock held while its buckets are read.
#include "profile/dump.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "profile/folded.hpp"
#include "profile/leaks.hpp"
#include "profile/pprof.hpp"
#include "stack/text_line.hpp"
#include "strata/strata.h"

namespace strata::profile {

namespace {

constexpr std::size_t path_max = 4096;
char exit_path[path_max];  // empty: no profile at exit
bool leaks_at_exit = false;
bool started = false;
double period = 0;
pid_t start_pid = 0;

constexpr std::size_t sink_bytes = std::size_t{64} << 10;
constexpr std::size_t maps_text_bytes = std::size_t{1} << 20;
constexpr std::size_t max_mappings = 4096;

// What one dump works in, mapped for it and unmapped after; the location
// table's slots (sized per dump) follow it.
struct scratch {
  std::uint8_t sink_buffer[sink_bytes];
  char maps_text[maps_text_bytes];
  mapping mappings[max_mappings];
};

// The smallest power of two of at least twice the frames of `count` buckets.
std::size_t slots_for(const bucket* buckets, std::size_t count) noexcept {
  std::size_t frames = 1;
  for (std::size_t i = 0; i < count; ++i) frames += buckets[i].stack.count;
  std::size_t slots = 1;
  while (slots < 2 * frames) slots *= 2;
  return slots;
}

// Write one file by `write`; 0 or an errno value.
template <class Write>
int write_file(const char* path, std::uint8_t* buffer, Write write) noexcept {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  sink out(fd, buffer, sink_bytes);
  write(out);
  int error = out.flush();
  if (close(fd) != 0 && error == 0) error = errno;
  return error;
}

// Both files of a dump from the locked buckets.
int write_profiles(const char* path, const bucket* buckets, std::size_t count) noexcept {
  std::size_t slots = slots_for(buckets, count);
  std::size_t bytes = sizeof(scratch) + slots * sizeof(std::uint64_t);
  void* area = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return ENOMEM;
  auto* s = static_cast<scratch*>(area);
  pprof_input in{buckets, count, s->mappings, 0, period, reinterpret_cast<std::uint64_t*>(s + 1),
                 slots};
  in.mapping_count = read_mappings(s->mappings, max_mappings, s->maps_text, maps_text_bytes);
  int error = write_file(path, s->sink_buffer, [&](sink& out) { write_pprof(out, in); });
  char folded[path_max + 8];
  std::size_t length = std::strlen(path);
  std::memcpy(folded, path, length);
  std::memcpy(folded + length, ".folded", 8);
  if (error == 0)
    error =
        write_file(folded, s->sink_buffer, [&](sink& out) { write_folded(out, buckets, count); });
  munmap(area, bytes);
  return error;
}

// The exit profile's path: the one named, or in a forked child the one named
// with ".<pid>" after it, so the child does not overwrite its parent's.
void exit_path_for_this_process(char (&out)[path_max + 24]) noexcept {
  std::size_t length = std::strlen(exit_path);
  std::memcpy(out, exit_path, length + 1);
  if (getpid() == start_pid) return;
  char digits[16];
  int n = 0;
  for (auto pid = static_cast<unsigned>(getpid()); pid != 0; pid /= 10)
    digits[n++] = static_cast<char>('0' + pid % 10);
  out[length++] = '.';
  while (n > 0) out[length++] = digits[--n];
  out[length] = 0;
}

// At exit: the profile where STRATA_PROFILE names, then the leak report.
void at_exit() noexcept {
  if (exit_path[0] != 0) {
    char path[path_max + 24];
    exit_path_for_this_process(path);
    if (int error = dump(path); error != 0) {
      stack::text_line line;
      line.text("strata: profile: cannot write ").text(path).text(": ").text(strerror(error));
      line.flush();
    }
  }
  if (leaks_at_exit) {
    std::size_t count;
    const bucket* buckets = table_lock(&count);
    report_leaks(buckets, count, 10);
    table_unlock();
  }
}

// The dump signal: the exit profile's files, written now (errno kept for the
// interrupted code).
void on_signal(int) {
  int saved = errno;
  char path[path_max + 24];
  exit_path_for_this_process(path);
  dump(path);
  errno = saved;
}

}  // namespace

void dump_start(const char* path, bool leaks, int signal, double rate) noexcept {
  if (path != nullptr && std::strlen(path) < path_max) std::strcpy(exit_path, path);
  leaks_at_exit = leaks;
  period = rate;
  start_pid = getpid();
  started = true;
  pthread_atfork(table_fork_prepare, table_fork_after, table_fork_after);
  atexit(at_exit);
  if (signal > 0 && exit_path[0] != 0) {
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART;
    sigaction(signal, &action, nullptr);
  }
}

// A signal that arrives while its thread holds the table's lock cannot dump:
// EDEADLK, nothing written.
int dump(const char* path) noexcept {
  if (!started || path == nullptr || *path == 0 || std::strlen(path) >= path_max) return EINVAL;
  if (table_held_here()) return EDEADLK;
  std::size_t count;
  const bucket* buckets = table_lock(&count);
  int error = write_profiles(path, buckets, count);
  table_unlock();
  return error;
}

}  // namespace strata::profile

// Write the heap profile now (see strata.h).
int strata_profile_dump(const char* path) STRATA_NOEXCEPT {
  int error = strata::profile::dump(path);
  if (error != 0) errno = error;
  return error;
}
