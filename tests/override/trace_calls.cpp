// STRATA_TRACE records exactly the calls a program makes. `trace_calls run`
// makes a known set of calls, each with a size nothing else in the process
// asks for (every entry point family, four threads, a fork whose child
// allocates too); `trace_calls check FILE` then finds each one in the trace
// with its size, alignment, address and thread, and `trace_calls check-split
// DIR` checks the two files a "%p" pattern gives parent and child.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "strata/trace_reader.hpp"

namespace {

using strata::trace::op;
using strata::trace::record;

constexpr int main_mallocs = 10;
constexpr int thread_count = 4;
constexpr int thread_pairs = 1000;
constexpr int parent_live = 100;
constexpr int child_mallocs = 50;

// Keeps the compiler from eliding an allocation whose block is never used.
void keep(void* p) {
  asm volatile("" : : "r"(p) : "memory");
}

// Every allocation entry point once or more, each block freed.
void single_thread_calls() {
  for (int i = 0; i < main_mallocs; ++i) {
    void* p = std::malloc(1001);
    keep(p);
    std::free(p);
  }
  for (int i = 0; i < 5; ++i) {
    void* p = std::calloc(3, 337);
    keep(p);
    std::free(p);
  }
  void* p = std::malloc(1021);
  keep(p);
  p = std::realloc(p, 2021);
  keep(p);
  std::free(p);
  p = std::malloc(1022);
  keep(p);
  p = reallocarray(p, 3, 341);
  keep(p);
  std::free(p);
  void* q = nullptr;
  if (posix_memalign(&q, 64, 1031) != 0) std::abort();
  std::free(q);
  struct {
    std::size_t alignment;
    std::size_t size;
    void* (*call)(std::size_t, std::size_t);
  } aligned_calls[] = {
      {128, 1280, [](std::size_t a, std::size_t s) { return aligned_alloc(a, s); }},
      {256, 1033, [](std::size_t a, std::size_t s) { return memalign(a, s); }},
      {4096, 1034, [](std::size_t, std::size_t s) { return valloc(s); }},
      {4096, 1035, [](std::size_t, std::size_t s) { return pvalloc(s); }},
  };
  for (auto& c : aligned_calls) {
    void* block = c.call(c.alignment, c.size);
    keep(block);
    std::free(block);
  }
  void* a = ::operator new(1041);
  keep(a);
  ::operator delete(a);
  void* b = ::operator new[](1042);
  keep(b);
  ::operator delete[](b);
  void* c = ::operator new(1043, std::align_val_t(64));
  keep(c);
  ::operator delete(c, std::align_val_t(64));
  void* d = ::operator new(1044, std::nothrow);
  keep(d);
  ::operator delete(d, std::nothrow);
}

// Threads allocating and freeing blocks of a size of their own.
void threaded_calls() {
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < thread_pairs; ++i) {
        void* p = std::malloc(2001 + t);
        keep(p);
        std::free(p);
      }
    });
  for (auto& t : threads) t.join();
}

// Blocks still in this thread's trace buffer when the process forks; the child
// allocates blocks of its own and exits through exit().
int fork_calls() {
  std::vector<void*> live;
  for (int i = 0; i < parent_live; ++i) live.push_back(std::malloc(3001));
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < child_mallocs; ++i) keep(std::malloc(3002));
    std::exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 1;
  for (void* p : live) std::free(p);
  return 0;
}

int failures = 0;

// Reports a failed expectation.
void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++failures;
}

// The records of one trace file, refused when it does not parse.
std::vector<record> load(const std::string& path) {
  std::vector<record> records;
  std::string error;
  if (!strata::trace::read_file(path.c_str(), records, error)) {
    std::fprintf(stderr, "FAIL: %s: %s\n", path.c_str(), error.c_str());
    std::exit(1);
  }
  return records;
}

// Records of one kind and size.
std::vector<record> matching(const std::vector<record>& records, op kind, std::uint64_t size) {
  std::vector<record> out;
  for (const record& r : records)
    if (r.kind == kind && r.size == size) out.push_back(r);
  return out;
}

// Whether the block at `address`, allocated on `thread`, is freed later on that thread.
bool freed_after(const std::vector<record>& records, const record& allocation) {
  bool seen = false;
  for (const record& r : records) {
    if (&r == &allocation || (r.kind == allocation.kind && r.address == allocation.address &&
                              r.time_ns == allocation.time_ns && r.thread == allocation.thread)) {
      seen = true;
      continue;
    }
    if (seen && r.thread == allocation.thread &&
        ((r.kind == op::free && r.address == allocation.address) ||
         (r.kind == op::realloc && r.old_address == allocation.address)))
      return true;
  }
  return false;
}

// One call: exactly one record of that kind, size and alignment, its block freed.
void expect_single(const std::vector<record>& records, op kind, std::uint64_t size,
                   unsigned alignment_log2, const char* what) {
  auto found = matching(records, kind, size);
  expect(found.size() == 1,
         std::string(what) + ": " + std::to_string(found.size()) + " records, want 1");
  if (found.size() != 1) return;
  expect(found[0].address != 0, std::string(what) + ": no address");
  expect(found[0].alignment_log2 == alignment_log2, std::string(what) + ": alignment");
  expect(freed_after(records, found[0]), std::string(what) + ": block never freed");
}

// The trace of `run`: every call there, once, with the right details.
int check(const std::string& path) {
  std::vector<record> records = load(path);
  auto mallocs = matching(records, op::malloc, 1001);
  expect(mallocs.size() == main_mallocs, "malloc(1001): " + std::to_string(mallocs.size()));
  for (const record& r : mallocs) expect(freed_after(records, r), "malloc(1001) block freed");
  expect(matching(records, op::calloc, 1011).size() == 5, "calloc(3, 337) x5");
  auto first = matching(records, op::malloc, 1021);
  auto grown = matching(records, op::realloc, 2021);
  expect(first.size() == 1 && grown.size() == 1 && grown[0].old_address == first[0].address,
         "realloc(malloc(1021), 2021) names its old block");
  auto second = matching(records, op::malloc, 1022);
  auto array = matching(records, op::realloc, 1023);
  expect(second.size() == 1 && array.size() == 1 && array[0].old_address == second[0].address,
         "reallocarray(p, 3, 341) is a realloc of 1023 bytes");
  expect_single(records, op::aligned, 1031, 6, "posix_memalign(64)");
  expect_single(records, op::aligned, 1280, 7, "aligned_alloc(128)");
  expect_single(records, op::aligned, 1033, 8, "memalign(256)");
  expect_single(records, op::aligned, 1034, 12, "valloc");
  expect_single(records, op::aligned, 1035, 12, "pvalloc");
  expect_single(records, op::malloc, 1041, 0, "operator new");
  expect_single(records, op::malloc, 1042, 0, "operator new[]");
  expect_single(records, op::aligned, 1043, 6, "operator new(align_val_t(64))");
  expect_single(records, op::malloc, 1044, 0, "operator new(nothrow)");

  std::uint32_t main_thread = mallocs.empty() ? 0 : mallocs[0].thread;
  std::set<std::uint32_t> ids;
  for (int t = 0; t < thread_count; ++t) {
    auto found = matching(records, op::malloc, 2001 + t);
    expect(found.size() == thread_pairs,
           "thread " + std::to_string(t) + ": " + std::to_string(found.size()) + " mallocs");
    std::set<std::uint32_t> of_thread;
    for (const record& r : found) of_thread.insert(r.thread);
    expect(of_thread.size() == 1, "thread " + std::to_string(t) + ": one thread id");
    if (!of_thread.empty()) ids.insert(*of_thread.begin());
    std::set<std::uint64_t> addresses;
    for (const record& r : found) addresses.insert(r.address);
    std::size_t frees = 0;
    for (const record& r : records)
      if (r.kind == op::free && of_thread.count(r.thread) != 0 && addresses.count(r.address) != 0)
        ++frees;
    expect(frees >= thread_pairs, "thread " + std::to_string(t) + ": its frees");
  }
  expect(ids.size() == thread_count && ids.count(main_thread) == 0, "a thread id per thread");

  expect(matching(records, op::malloc, 3001).size() == parent_live,
         "malloc(3001) once each (the forked child did not write the parent's buffer again)");
  expect(matching(records, op::malloc, 3002).empty(), "the forked child records nothing");

  std::map<std::uint32_t, std::uint64_t> last_time;
  for (const record& r : records) {
    expect(r.time_ns >= last_time[r.thread], "time goes forward on each thread");
    last_time[r.thread] = r.time_ns;
  }
  return failures == 0 ? 0 : 1;
}

// The two files of STRATA_TRACE=DIR/trace.%p: the parent's has everything the
// parent did, the child's only the child's blocks.
int check_split(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  expect(files.size() == 2, "two trace files, got " + std::to_string(files.size()));
  if (files.size() != 2) return 1;
  auto a = load(files[0]), b = load(files[1]);
  auto& parent = matching(a, op::malloc, 1001).empty() ? b : a;
  auto& child = &parent == &a ? b : a;
  expect(matching(parent, op::malloc, 3001).size() == parent_live, "the parent's malloc(3001)");
  expect(matching(parent, op::malloc, 3002).empty(), "no child block in the parent's file");
  expect(matching(child, op::malloc, 3002).size() == child_mallocs, "the child's malloc(3002)");
  expect(matching(child, op::malloc, 3001).empty(), "the child dropped the parent's records");
  expect(matching(child, op::malloc, 1001).empty(),
         "nothing from before the fork in the child's file");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "run") {
    single_thread_calls();
    threaded_calls();
    return fork_calls();
  }
  if (mode == "check" && argc == 3) return check(argv[2]);
  if (mode == "check-split" && argc == 3) return check_split(argv[2]);
  std::fprintf(stderr, "usage: trace_calls run | check FILE | check-split DIR\n");
  return 2;
}
