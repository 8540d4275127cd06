// The STRATA_TRACE recorder. Each thread appends 40-byte records to a 64 KiB
// buffer of its own (mapped with mmap: recording never calls malloc) and writes
// it to the trace file when it fills, when the thread exits and when the
// process exits; the writes of all threads go to one O_APPEND descriptor under
// one lock, a whole buffer at a time, so records never interleave mid-record.
//
// STRATA_TRACE=path traces this process only: the variable is taken out of the
// environment so the programs it starts do not truncate the file, and a child
// made by fork stops recording. A path containing "%p" traces every process
// into a file of its own, the %p replaced by the process id (a forked child
// opens its file at once).
//
// Time: CLOCK_MONOTONIC. Where the kernel's own clock source is the TSC (so it
// has checked that the TSC runs at a constant rate and agrees across CPUs), a
// record takes the TSC (a few ns) instead of calling clock_gettime (about 20 ns
// in a VM), and the buffer's flush turns the ticks into monotonic nanoseconds
// by interpolating between two (TSC, CLOCK_MONOTONIC) readings, one taken when
// the buffer started and one at the flush.
//
// Records made after the exit flush (destructors of libraries loaded before the
// override, the loader's own frees) and by a thread after its buffer was handed
// back are written one at a time. Records buffered by threads still running at
// exit are flushed as they stand, best effort; _exit and abort lose them.
#include "override/trace_recorder.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "heap/heap.hpp"
#include "heap/sampling.hpp"
#include "options/report_output.hpp"

namespace strata::trace_recorder {

bool enabled = false;

namespace {

constexpr std::size_t buffer_bytes = 64 * 1024;
constexpr std::size_t buffer_capacity = (buffer_bytes - 32) / sizeof(trace::record);

struct clock_reading {
  std::uint64_t ticks;  // the TSC
  std::uint64_t ns;     // CLOCK_MONOTONIC
};

struct thread_buffer {
  thread_buffer* next;  // every buffer handed out, for the exit flush
  std::uint32_t count;
  clock_reading since;  // taken before the buffer's first record
  trace::record records[buffer_capacity];
};
static_assert(sizeof(thread_buffer) <= buffer_bytes);

struct thread_state {
  thread_buffer* buffer;
  std::uint32_t id;  // 0 until the thread's first record
  bool busy;         // inside record(): a call made while recording is not recorded
  bool exited;       // buffer handed back at thread exit: write each record at once
};

constinit thread_local thread_state tls __attribute__((tls_model(STRATA_TLS_MODEL))) = {};

pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
int trace_fd = -1;
thread_buffer* all_buffers = nullptr;   // under write_lock
thread_buffer* idle_buffers = nullptr;  // handed back by exited threads, under write_lock
std::atomic<std::uint32_t> thread_count{0};
std::atomic<bool> exiting{false};
std::uint64_t start_ns = 0;
bool tsc_time = false;  // records hold TSC ticks until their buffer is flushed
pthread_key_t exit_key;
char pattern[PATH_MAX];  // STRATA_TRACE as given
bool per_process = false;

// Monotonic nanoseconds: the clock every record's time comes from.
std::uint64_t monotonic_ns() noexcept {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The TSC, or 0 where there is none.
std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

// Both clocks, read together.
clock_reading read_clocks() noexcept {
  return {ticks(), monotonic_ns()};
}

// Whether the kernel keeps time with the TSC: then it is constant-rate and
// synchronised across CPUs, and a record can take it instead of the clock.
bool kernel_uses_tsc() noexcept {
#if defined(__x86_64__)
  int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[16] = {};
  ssize_t n = ::read(fd, name, sizeof name - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(name, "tsc", 3) == 0 && (n == 3 || name[3] == '\n');
#else
  return false;
#endif
}

// What a record stores as its time when it is made: TSC ticks (converted at
// the flush) or nanoseconds since the trace started.
std::uint64_t record_stamp() noexcept {
  return tsc_time ? ticks() : monotonic_ns() - start_ns;
}

// Turns a buffer's TSC stamps into nanoseconds since the trace started, by the
// line through the buffer's start reading and one taken now.
void convert_stamps(thread_buffer* buffer) noexcept {
  clock_reading now = read_clocks();
  clock_reading since = buffer->since;
  std::uint64_t span_ticks = now.ticks > since.ticks ? now.ticks - since.ticks : 1;
  std::uint64_t span_ns = now.ns > since.ns ? now.ns - since.ns : 0;
  // Nanoseconds per tick in 32.32 fixed point (ticks run faster than 1 GHz / 2^32).
  auto scale =
      static_cast<std::uint64_t>((static_cast<unsigned __int128>(span_ns) << 32) / span_ticks);
  for (std::uint32_t i = 0; i < buffer->count; ++i) {
    std::uint64_t t = buffer->records[i].time_ns;
    std::uint64_t elapsed = t > since.ticks ? t - since.ticks : 0;
    auto ns = since.ns +
              static_cast<std::uint64_t>((static_cast<unsigned __int128>(elapsed) * scale) >> 32);
    buffer->records[i].time_ns = ns > start_ns ? ns - start_ns : 0;
  }
  buffer->since = now;
}

// Writes all the bytes or stops recording (disk full, file closed): a trace
// with a hole would replay wrongly, a shorter one only ends early.
void write_all(const void* data, std::size_t bytes) noexcept {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0 && trace_fd >= 0) {
    ssize_t w = ::write(trace_fd, p, bytes);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      options::report_write("strata: STRATA_TRACE: writing the trace failed; recording stops\n");
      enabled = false;
      ::close(trace_fd);
      trace_fd = -1;
      return;
    }
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
}

// Writes a buffer's records and empties it; the caller holds write_lock.
void flush_locked(thread_buffer* buffer) noexcept {
  if (tsc_time) convert_stamps(buffer);
  write_all(buffer->records, buffer->count * sizeof(trace::record));
  buffer->count = 0;
}

// Writes one record on its own, for threads without a buffer.
void write_one(trace::record r) noexcept {
  r.time_ns = monotonic_ns() - start_ns;
  pthread_mutex_lock(&write_lock);
  write_all(&r, sizeof r);
  pthread_mutex_unlock(&write_lock);
}

// A buffer for the calling thread: one an exited thread gave back, else a new
// mapping; the thread-exit key is armed so the buffer is written and returned.
thread_buffer* take_buffer() noexcept {
  pthread_mutex_lock(&write_lock);
  thread_buffer* buffer = idle_buffers;
  if (buffer != nullptr) idle_buffers = buffer->next;
  pthread_mutex_unlock(&write_lock);
  if (buffer == nullptr) {
    void* memory =
        mmap(nullptr, buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return nullptr;
    buffer = static_cast<thread_buffer*>(memory);
  }
  buffer->count = 0;
  buffer->since = read_clocks();
  pthread_mutex_lock(&write_lock);
  buffer->next = all_buffers;
  all_buffers = buffer;
  pthread_mutex_unlock(&write_lock);
  pthread_setspecific(exit_key, buffer);
  return buffer;
}

// Unlinks a buffer from the list of those in use; the caller holds write_lock.
void unlink_locked(thread_buffer* buffer) noexcept {
  for (thread_buffer** link = &all_buffers; *link != nullptr; link = &(*link)->next) {
    if (*link == buffer) {
      *link = buffer->next;
      return;
    }
  }
}

// Thread exit (a pthread key destructor, after C++ thread_local destructors):
// write the thread's records and hand its buffer to the next thread.
void thread_exit(void* value) noexcept {
  auto* buffer = static_cast<thread_buffer*>(value);
  pthread_mutex_lock(&write_lock);
  flush_locked(buffer);
  unlink_locked(buffer);
  buffer->next = idle_buffers;
  idle_buffers = buffer;
  pthread_mutex_unlock(&write_lock);
  tls.buffer = nullptr;
  tls.exited = true;
}

// Process exit: write every buffer; later records are written one at a time.
void process_exit() noexcept {
  pthread_mutex_lock(&write_lock);
  for (thread_buffer* buffer = all_buffers; buffer != nullptr; buffer = buffer->next)
    flush_locked(buffer);
  exiting.store(true, std::memory_order_relaxed);
  pthread_mutex_unlock(&write_lock);
}

// The file name for this process: the pattern with each %p replaced by the pid.
void expand_path(char* out, std::size_t capacity) noexcept {
  char pid[24];
  int pid_length = 0;
  for (long v = static_cast<long>(getpid()); v > 0 || pid_length == 0; v /= 10)
    pid[pid_length++] = static_cast<char>('0' + v % 10);
  std::size_t n = 0;
  for (const char* p = pattern; *p != '\0' && n + 1 < capacity; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      for (int i = pid_length - 1; i >= 0 && n + 1 < capacity; --i) out[n++] = pid[i];
      ++p;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
}

// Creates (truncates) this process's trace file and writes the header.
bool open_trace_file() noexcept {
  char path[PATH_MAX];
  expand_path(path, sizeof path);
  trace_fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (trace_fd < 0) {
    options::report_write("strata: STRATA_TRACE: cannot create the trace file; not recording\n");
    return false;
  }
  trace::file_header header{};
  std::memcpy(header.magic, trace::magic, sizeof header.magic);
  header.version = trace::version;
  write_all(&header, sizeof header);
  return trace_fd >= 0;
}

// fork: no buffer is being written while the process is copied.
void fork_prepare() noexcept {
  pthread_mutex_lock(&write_lock);
}

void fork_parent() noexcept {
  pthread_mutex_unlock(&write_lock);
}

// The child drops the records it inherited (they are the parent's to write),
// then records into a file of its own with %p, or stops recording.
void fork_child() noexcept {
  for (thread_buffer* buffer = all_buffers; buffer != nullptr; buffer = buffer->next)
    buffer->count = 0;
  pthread_mutex_unlock(&write_lock);
  if (trace_fd < 0) return;
  ::close(trace_fd);
  trace_fd = -1;
  if (!per_process || !open_trace_file()) {
    enabled = false;
    return;
  }
  thread_count.store(1, std::memory_order_relaxed);
  tls.id = 1;
}

}  // namespace

// Records one call: the buffer write is the common case, everything else cold.
void record(trace::op kind, const void* address, std::size_t size, const void* old_address,
            std::size_t alignment) noexcept {
  thread_state& self = tls;
  if (self.busy || !on()) return;
  self.busy = true;
  if (self.id == 0) self.id = thread_count.fetch_add(1, std::memory_order_relaxed) + 1;
  trace::record r{};
  r.time_ns = record_stamp();
  r.address = reinterpret_cast<std::uintptr_t>(address);
  r.size = size;
  r.old_address = reinterpret_cast<std::uintptr_t>(old_address);
  r.thread = self.id;
  r.kind = kind;
  r.alignment_log2 = alignment > 1 ? static_cast<std::uint8_t>(__builtin_ctzll(alignment)) : 0;
  if (self.buffer == nullptr && !self.exited && !exiting.load(std::memory_order_relaxed))
    self.buffer = take_buffer();
  thread_buffer* buffer = self.buffer;
  if (buffer == nullptr || exiting.load(std::memory_order_relaxed)) {
    write_one(r);
  } else {
    buffer->records[buffer->count++] = r;
    if (buffer->count == buffer_capacity) {
      pthread_mutex_lock(&write_lock);
      flush_locked(buffer);
      pthread_mutex_unlock(&write_lock);
    }
  }
  self.busy = false;
}

namespace {

// malloc's recording twin proper, out of line so that malloc_recorded keeps
// no frame of its own while only the samplers are on.
__attribute__((noinline, cold)) void* malloc_then_record(std::size_t size) noexcept {
  void* p = heap::malloc_sampled(heap::tls_entry.own_heap, size);
  record(trace::op::malloc, p, size);
  return p;
}

}  // namespace

__attribute__((noinline, cold)) void* malloc_recorded(std::size_t size) noexcept {
  if (!on()) return heap::malloc_sampled(heap::tls_entry.own_heap, size);  // sampling alone: a jump
  return malloc_then_record(size);
}

__attribute__((noinline, cold)) void* new_recorded(std::size_t size, void* (*retry)(std::size_t)) {
  void* p = heap::malloc_sampled(heap::tls_entry.own_heap, size);
  if (p == nullptr) return retry(size);
  if (on()) record(trace::op::malloc, p, size);
  return p;
}

__attribute__((noinline, cold)) void free_recorded(void* p) noexcept {
  if (p != nullptr) record(trace::op::free, p, 0);  // before the block can be reused
  heap::heap_free(p);
}

void start() noexcept {
  const char* path = getenv("STRATA_TRACE");
  if (path == nullptr || path[0] == '\0') return;
  if (std::strlen(path) >= sizeof pattern) {
    options::report_write("strata: STRATA_TRACE: path too long; not recording\n");
    return;
  }
  std::strcpy(pattern, path);
  per_process = std::strstr(pattern, "%p") != nullptr;
  if (!per_process) unsetenv("STRATA_TRACE");
  if (pthread_key_create(&exit_key, thread_exit) != 0 || !open_trace_file()) return;
  tsc_time = kernel_uses_tsc();
  start_ns = monotonic_ns();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  atexit(process_exit);
  enabled = true;
  heap::sampling_force_on();  // malloc records through its sampled path
}

}  // namespace strata::trace_recorder
