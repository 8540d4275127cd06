// Guarded sampling through the C API and first-class heaps: overflow,
// underflow, use after free, double free and invalid free each reported with
// the right kind, offset, stacks and threads, also from a second thread and in
// a forked child; aligned requests sampled at their alignment; the statistics
// count sampled blocks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// The aligned entry points of the C API, by index: a block of `size` bytes at `alignment`.
void* aligned_block(int entry, std::size_t size, std::size_t alignment, strata_heap_t* heap) {
  void* p = nullptr;
  switch (entry) {
    case 0:
      return strata_malloc_aligned(size, alignment);
    case 1:
      return strata_aligned_alloc(alignment, size);
    case 2:
      return strata_posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
    default:
      return strata_heap_malloc_aligned(heap, size, alignment);
  }
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

// After fork the child samples, places and reports as the parent does, under
// its own thread id (the parent's thread asked for its own before the fork).
TEST(guarded_sampling, forked_child_reports_its_fault) {
  strata_free(guarded_block(32));
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
  // The child's one thread has the child's process id.
  std::string allocated_by = "allocated by thread " + std::to_string(child) + ":";
  EXPECT_NE(report.find(allocated_by), std::string::npos) << report;
}

TEST(guarded_sampling, aligned_requests_are_sampled_at_their_alignment) {
  strata_free(strata_malloc(1));  // the samplers start with the process's first allocation
  strata_heap_t* heap = strata_heap_new();
  for (int entry = 0; entry < 4; ++entry) {
    for (std::size_t alignment : {32, 64, 256, 1024, 4096}) {
      for (std::size_t size : {std::size_t{1}, std::size_t{40}, std::size_t{4096}}) {
        auto* p = static_cast<char*>(aligned_block(entry, size, alignment, heap));
        ASSERT_NE(p, nullptr) << entry << " " << alignment << " " << size;
        EXPECT_TRUE(strata::guarded::owns(p)) << entry << " " << alignment << " " << size;
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u) << entry << " " << alignment;
        EXPECT_GE(strata_usable_size(p), size);
        std::memset(p, 0x5a, size);  // every byte of the block is accessible
        strata_free(p);
      }
    }
    // Above a page no slot can place it: the heap serves it, aligned as asked.
    auto* big = static_cast<char*>(aligned_block(entry, 100, 8192, heap));
    ASSERT_NE(big, nullptr);
    EXPECT_FALSE(strata::guarded::owns(big));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % 8192, 0u);
    strata_free(big);
  }
  strata_heap_delete(heap);
  void* p = nullptr;
  EXPECT_EQ(strata_posix_memalign(&p, 24, 64), EINVAL);  // a bad alignment keeps its answer
}

TEST(guarded_sampling, aligned_overflow_is_reported) {
  char* p = nullptr;
  for (int i = 0; i < 1000 && p == nullptr; ++i) {  // one that ends against its guard page
    p = static_cast<char*>(strata_malloc_aligned(64, 64));
    ASSERT_TRUE(strata::guarded::owns(p));
    if ((reinterpret_cast<std::uintptr_t>(p + 64) & 4095) != 0)
      strata_free(std::exchange(p, nullptr));
  }
  ASSERT_NE(p, nullptr);
  EXPECT_DEATH(touch(p + 64),
               "caught a buffer overflow \\(write\\).*block of 64 bytes.*"
               "0 bytes past its end.*aligned_overflow_is_reported");
  strata_free(p);
}

// With every allocation sampled, strata_stats_get counts the guarded blocks as
// heap blocks of their class: mallocs, frees and bytes in use add up.
TEST(guarded_sampling, statistics_count_sampled_blocks) {
  constexpr std::size_t size = 200;  // a class no other test of this program uses
  strata_free(strata_malloc(1));
  strata_stats_t start;
  strata_stats_get(&start);
  std::size_t cls = 0;
  while (strata_size_class_size(cls) < size) ++cls;
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(i % 2 == 0 ? strata_malloc(size) : strata_malloc_aligned(size, 64));
    ASSERT_TRUE(strata::guarded::owns(blocks.back()));
  }
  strata_stats_t live;
  strata_stats_get(&live);
  EXPECT_EQ(live.class_mallocs[cls] - start.class_mallocs[cls], 100u);
  EXPECT_EQ(live.mallocs - start.mallocs, 100u);
  EXPECT_EQ(live.in_use - start.in_use, 100 * strata_size_class_size(cls));
  EXPECT_GE(live.committed - start.committed, 100u * 4096);  // a page each at least
  EXPECT_GE(live.peak_in_use, live.in_use);
  EXPECT_GE(live.reserved, strata::guarded::region_bytes());
  for (void* p : blocks) strata_free(p);
  strata_stats_t end;
  strata_stats_get(&end);
  EXPECT_EQ(end.class_frees[cls] - start.class_frees[cls], 100u);
  EXPECT_EQ(end.frees - start.frees, 100u);
  EXPECT_EQ(end.in_use, start.in_use);
  EXPECT_EQ(end.committed, start.committed);
  // The totals are the sums of the classes.
  std::uint64_t mallocs = 0;
  std::size_t in_use = end.huge_in_use;
  for (std::size_t c = 0; c < STRATA_SIZE_CLASSES; ++c) {
    mallocs += end.class_mallocs[c];
    in_use += (end.class_mallocs[c] - end.class_frees[c]) * strata_size_class_size(c);
  }
  EXPECT_LE(mallocs, end.mallocs);  // the rest: blocks above the classes
  EXPECT_EQ(in_use, end.in_use);
}
