// Guarded sampling through the C API and first-class heaps: overflow,
// underflow, use after free, double free and invalid free each reported with
// the right kind, offset, stacks and threads, also from a second thread and in
// a forked child.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "guarded/region.hpp"
#include "strata/strata.h"

namespace {

// A block in the guarded region: every allocation is sampled here but a
// thread's first (made before the samplers start, for the first thread).
char* guarded_block(std::size_t size) {
  auto* p = static_cast<char*>(strata_malloc(size));
  if (!strata::guarded::owns(p)) {
    strata_free(p);
    p = static_cast<char*>(strata_malloc(size));
  }
  EXPECT_TRUE(strata::guarded::owns(p));
  return p;
}

// A guarded block of a multiple of 16 bytes that ends against the guard page
// after it (most do; the others go against the guard page before them).
char* overflow_block(std::size_t size) {
  for (int i = 0; i < 1000; ++i) {
    char* p = guarded_block(size);
    if ((reinterpret_cast<std::uintptr_t>(p + size) & 4095) == 0) return p;
    strata_free(p);
  }
  return nullptr;
}

// A guarded block placed against the guard page before it (a share of them is).
char* underflow_block(std::size_t size) {
  for (int i = 0; i < 1000; ++i) {
    char* p = guarded_block(size);
    if ((reinterpret_cast<std::uintptr_t>(p) & 4095) == 0) return p;
    strata_free(p);
  }
  return nullptr;
}

void touch(volatile char* p) {
  *p = 1;
}

char peek(volatile char* p) {
  return *p;
}

}  // namespace

// The tests are outside the anonymous namespace: their exported names are
// what the reports' stacks are checked for.

TEST(guarded_sampling, blocks_work_as_blocks) {
  char* p = guarded_block(48);
  EXPECT_EQ(strata_usable_size(p), 48u);
  for (int i = 0; i < 48; ++i) p[i] = static_cast<char>(i);
  auto* q = static_cast<char*>(strata_realloc(p, 100));
  ASSERT_NE(q, nullptr);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(q[i], static_cast<char>(i));
  strata_free(q);
  auto* z = static_cast<unsigned char*>(strata_calloc(10, 10));  // a reused slot: cleared
  ASSERT_TRUE(strata::guarded::owns(z));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(z[i], 0);
  strata_free(z);
}

TEST(guarded_sampling, region_is_bounded) {
  // More live blocks than slots: the rest come from the heap.
  void* blocks[300];
  int guarded = 0;
  for (void*& b : blocks) guarded += strata::guarded::owns(b = strata_malloc(32)) ? 1 : 0;
  EXPECT_LE(guarded, 256);
  EXPECT_GT(guarded, 0);
  for (void* b : blocks) strata_free(b);
}

TEST(guarded_sampling, overflow_is_reported) {
  char* p = overflow_block(48);
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(touch(p + 50),
               "caught a buffer overflow \\(write\\) at 0x[0-9a-f]+\n"
               "  block of 48 bytes at 0x[0-9a-f]+, 2 bytes past its end \\(slot [0-9]+\\)\n"
               "  allocated by thread [0-9]+:\n    #0 [^\n]*\n    #1 [^\n]*overflow_is_reported");
}

TEST(guarded_sampling, underflow_is_reported) {
  char* p = underflow_block(64);
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(peek(p - 1), "caught a buffer underflow \\(read\\).*1 bytes before its start");
}

TEST(guarded_sampling, use_after_free_is_reported) {
  char* p = guarded_block(32);
  strata_free(p);
  EXPECT_DEATH(
      touch(p + 8),
      "caught a use after free \\(write\\).*offset 8.*"
      "allocated by thread [0-9]+:\n    #0 [^\n]*\n    #1 [^\n]*use_after_free_is_reported.*"
      "freed by thread [0-9]+:\n    #0 [^\n]*use_after_free_is_reported");
}

TEST(guarded_sampling, double_free_is_reported) {
  char* p = guarded_block(32);
  strata_free(p);
  EXPECT_DEATH(strata_free(p), "caught a double free.*freed by thread.*this call, by thread");
}

TEST(guarded_sampling, invalid_free_is_reported) {
  char* p = guarded_block(32);
  EXPECT_DEATH(strata_free(p + 16), "caught a invalid free.*offset 16");
  strata_free(p);
}

TEST(guarded_sampling, first_class_heap_blocks_are_sampled) {
  strata_free(strata_malloc(1));  // the samplers start with the process's first allocation
  strata_heap_t* h = strata_heap_new();
  char* p = nullptr;
  for (int i = 0; i < 1000 && p == nullptr; ++i) {  // one that ends against its guard page
    p = static_cast<char*>(strata_heap_malloc(h, 64));
    ASSERT_TRUE(strata::guarded::owns(p));
    if ((reinterpret_cast<std::uintptr_t>(p + 64) & 4095) != 0)
      strata_free(std::exchange(p, nullptr));
  }
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(touch(p + 64), "caught a buffer overflow");
  strata_free(p);
  strata_heap_delete(h);
}

// The allocating thread and the faulting one differ: the report names the
// allocating thread, whose id is not the main thread's.
TEST(guarded_sampling, fault_on_a_second_thread_is_reported) {
  char* p = nullptr;
  std::thread([&] { p = overflow_block(48); }).join();
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(std::thread([&] { touch(p + 48); }).join(), "caught a buffer overflow");
  EXPECT_EXIT(
      {
        std::thread([&] { strata_free(p); }).join();
        std::thread([&] { strata_free(p); }).join();
      },
      testing::KilledBySignal(SIGABRT), "caught a double free.*freed by thread [0-9]+");
}

// After fork the child samples, places and reports as the parent does.
TEST(guarded_sampling, forked_child_reports_its_fault) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t child = fork();
  if (child == 0) {
    dup2(out[1], STDERR_FILENO);
    char* p = overflow_block(48);
    if (p == nullptr) _exit(3);
    touch(p + 48);
    _exit(0);
  }
  close(out[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) report.append(buffer, n);
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << report;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_NE(report.find("caught a buffer overflow (write)"), std::string::npos) << report;
  EXPECT_NE(report.find("forked_child_reports_its_fault"), std::string::npos) << report;
}
