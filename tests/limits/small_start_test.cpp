// A small start: the process's first segment maps 1 MiB of its 32 MiB range and
// grows as pages are needed, so a program that allocates a few KiB maps little,
// touches an OS page per size class and runs no purge thread (nor does one whose
// heap stays under 4 MiB: its slow paths purge), and a program
// under a tight address-space limit (RLIMIT_AS) is served nearly all of it.
// Each test runs in a fresh process (a re-executed death test): no segment of
// an earlier test may exist when it starts.
#include <dirent.h>
#include <sys/mman.h>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "address_limit.hpp"
#include "heap/heap.hpp"
#include "heap/segment.hpp"
#include "os/os.hpp"
#include "strata/strata.h"

namespace {

using namespace strata_limits;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t segment_bytes = 32 * MiB;

// Leave the process with `code`, saying why on stderr when it is not 0.
[[noreturn]] void finish(int code, const char* what, std::size_t value) {
  if (code != 0) std::fprintf(stderr, "%s: %zu\n", what, value);
  std::fflush(nullptr);
  std::_Exit(code);
}

// A few KiB in blocks of many classes, then how much more the process maps.
[[noreturn]] void map_for_a_few_kib() {
  std::size_t before = mapped_bytes();
  std::vector<void*> blocks;
  blocks.reserve(32);
  for (std::size_t size = 16; size <= 1024; size += 48) blocks.push_back(strata_malloc(size));
  std::size_t grown = mapped_bytes() - before;
  for (void* p : blocks) strata_free(p);
  // A segment's first step and the heap's first metadata chunk, 1 MiB each.
  finish(grown <= 4 * MiB ? 0 : 1, "bytes mapped for a few KiB", grown);
}

// 16-byte blocks until the heap says no, under a limit 24 MiB above what the
// process maps now (less than one whole segment); then all freed, and as many again.
[[noreturn]] void fill_a_tight_limit() {
  constexpr std::size_t headroom = 24 * MiB;
  if (!limit_address_space(headroom)) finish(2, "setrlimit failed", 0);
  auto fill = [](std::size_t most) {
    void** chain = nullptr;
    std::size_t served = 0;
    while (served < most) {
      auto** block = static_cast<void**>(strata_malloc(16));
      if (block == nullptr) break;
      *block = chain;
      chain = block;
      ++served;
    }
    return std::pair<void**, std::size_t>{chain, served};
  };
  auto [chain, served] = fill(SIZE_MAX);
  if (errno != ENOMEM) finish(1, "errno after the refusal", static_cast<std::size_t>(errno));
  if (served * 16 < headroom / 4 * 3)
    finish(1, "bytes served under a 24 MiB headroom", served * 16);
  while (chain != nullptr) {
    void** next = static_cast<void**>(*chain);
    strata_free(chain);
    chain = next;
  }
  strata_collect(1);
  auto [again_chain, again] = fill(served);
  // Where the kernel puts the heap's metadata moves what a limit leaves by a
  // page or two between runs (1,490,944 or 1,499,136 blocks here): within 1%.
  finish(again >= served - served / 100 ? 0 : 1, "blocks served the second time", again);
}

// OS pages of [start, start + bytes) in memory.
std::size_t resident_pages(const void* start, std::size_t bytes) {
  const std::size_t page = strata::os::page_size();
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(start), bytes, in_core.data()) != 0) return SIZE_MAX;
  std::size_t count = 0;
  for (unsigned char c : in_core) count += c & 1;
  return count;
}

// One block in each of 16 classes, written: the segment holds the first OS
// page of each class's page and the header's pages that describe them.
[[noreturn]] void touch_a_few_kib() {
  constexpr std::size_t classes = 16;
  void* blocks[classes];
  for (std::size_t i = 0; i < classes; ++i) {
    blocks[i] = strata_malloc(16 * (i + 1));
    std::memset(blocks[i], 1, 16 * (i + 1));
  }
  const strata::heap::segment* seg = strata::heap::segment_of(blocks[0]);
  std::size_t resident = resident_pages(seg, seg->size);
  for (void* p : blocks) strata_free(p);
  finish(resident <= classes + 4 ? 0 : 1, "OS pages resident in the segment", resident);
}

// Five written blocks of a class that fits four in an OS page: a small heap
// carves its pages an OS page at a time, so the class's page holds two OS
// pages (carving 4 KiB and then 8 KiB, as a large heap does, held three).
[[noreturn]] void carve_a_page_at_a_time() {
  void* blocks[5];
  for (void*& p : blocks) {
    p = strata_malloc(1000);
    std::memset(p, 1, 1000);
  }
  auto page_start = reinterpret_cast<std::uintptr_t>(blocks[0]) & ~(std::uintptr_t{64 * 1024} - 1);
  std::size_t resident = resident_pages(reinterpret_cast<void*>(page_start), 64 * 1024);
  for (void* p : blocks) strata_free(p);
  finish(resident == 2 ? 0 : 1, "OS pages resident in the class's page", resident);
}

// A block of a one-block page (above 64 KiB), written and freed: a small
// heap gives the page's memory back at once, as glibc unmaps its large
// chunks, since only another one-block page would reuse it.
[[noreturn]] void give_a_one_block_page_back() {
  constexpr std::size_t size = 100000;
  auto* block = static_cast<unsigned char*>(strata_malloc(size));
  std::memset(block, 1, size);
  strata_stats_t before;
  strata_stats_get(&before);
  strata_free(block);
  strata_stats_t after;
  strata_stats_get(&after);
  std::size_t resident = resident_pages(block, size / 4096 * 4096);
  if (after.purged < before.purged + size / 4096 * 4096)
    finish(1, "bytes purged", after.purged - before.purged);
  finish(resident == 0 ? 0 : 1, "OS pages of the freed block resident", resident);
}

// Whether a thread of this process is named strata-purge.
bool purge_thread_running() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::string path = std::string("/proc/self/task/") + entry->d_name + "/comm";
    if (std::FILE* comm = std::fopen(path.c_str(), "r")) {
      char name[32] = {};
      found = found || (std::fgets(name, sizeof name, comm) != nullptr &&
                        std::strcmp(name, "strata-purge\n") == 0);
      std::fclose(comm);
    }
  }
  closedir(tasks);
  return found;
}

// A few KiB allocated and freed, rounds apart by more than the purge delay:
// nothing waits to be purged, so no thread starts. A freed 64 MiB block's
// mapping then waits in the cache: the thread starts and gives it back,
// though this thread calls the allocator no more.
[[noreturn]] void start_the_purge_thread_late() {
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 10);
  for (int round = 0; round < 3; ++round) {
    void* blocks[64];
    for (std::size_t i = 0; i < 64; ++i) blocks[i] = strata_malloc(16 + 64 * i);
    for (void* p : blocks) strata_free(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (purge_thread_running()) finish(1, "purge thread running after a few KiB", 0);
  strata_stats_t before;
  strata_stats_get(&before);
  void* big = strata_malloc(64 * MiB);
  std::memset(big, 1, 64 * MiB);
  strata_free(big);
  strata_free(strata_malloc(100));
  strata_stats_t after{};
  for (int i = 0; i < 500; ++i) {  // up to 5 s on a loaded machine; 10 ms when idle
    strata_stats_get(&after);
    if (after.purged >= before.purged + 32 * MiB) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!purge_thread_running()) finish(1, "no purge thread once memory waits", 0);
  finish(after.purged >= before.purged + 32 * MiB ? 0 : 1, "bytes purged", after.purged);
}

// Threads that take a little memory and exit leave it waiting to be purged,
// in a heap that has committed under 4 MiB: no purge thread starts for it, and
// the allocating thread's slow paths (a one-block page each malloc of 96 KiB)
// still give it back once the delay has passed.
[[noreturn]] void purge_a_small_heap_without_the_thread() {
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 10);
  strata_free(strata_malloc(16));  // this thread's heap and segment
  for (int t = 0; t < 3; ++t) {
    std::thread([t] {
      std::vector<void*> blocks;
      for (std::size_t i = 0; i < 400; ++i)
        blocks.push_back(strata_malloc(16 + (i * 37 + t) % 2000));
      for (std::size_t i = 1; i < blocks.size(); ++i) strata_free(blocks[i]);
      strata_free(blocks[0]);
    }).join();
  }
  strata_stats_t before;
  strata_stats_get(&before);
  if (before.committed >= 4 * MiB) finish(2, "committed for a small heap", before.committed);
  strata_stats_t after{};
  for (int i = 0; i < 500; ++i) {  // up to 5 s on a loaded machine; 20-30 ms when idle
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    strata_free(strata_malloc(96 * 1024));
    strata_stats_get(&after);
    if (after.purged > before.purged) break;
  }
  if (purge_thread_running()) finish(1, "purge thread running for a small heap", after.committed);
  finish(after.purged > before.purged ? 0 : 1, "bytes purged", after.purged);
}

void* foreign_freed = nullptr;

// Another mapping taken right inside the first segment's range, past its first
// step: the segment grows no further, a free of that mapping's memory goes to
// the foreign-pointer handler, and blocks keep coming from other segments.
[[noreturn]] void share_a_segment_range() {
  auto* first = static_cast<std::uint8_t*>(strata_malloc(16));
  auto* range = reinterpret_cast<std::uint8_t*>(reinterpret_cast<std::uintptr_t>(first) &
                                                ~(segment_bytes - 1));
  // The first free MiB past the first step: the loader's libraries may lie in the range.
  std::uint8_t* other_start = nullptr;
  void* other = MAP_FAILED;
  for (std::size_t at = 2 * MiB; at < 16 * MiB && other == MAP_FAILED; at += MiB) {
    other_start = range + at;
    other = mmap(other_start, 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  }
  if (other != other_start) finish(2, "could not map inside the segment's range", 0);
  strata::heap::set_foreign_free_handler([](void* p) { foreign_freed = p; });
  strata_free(static_cast<std::uint8_t*>(other) + 64);
  if (foreign_freed != static_cast<std::uint8_t*>(other) + 64) finish(1, "foreign free missed", 0);
  if (strata_usable_size(other) != 0) finish(1, "usable size of a foreign pointer", 1);
  std::vector<std::uint8_t*> blocks;
  for (int i = 0; i < 256; ++i) {  // 16 MiB of 64 KiB blocks: past where the other mapping lies
    auto* p = static_cast<std::uint8_t*>(strata_malloc(64 * 1024));
    if (p == nullptr) finish(1, "refused block", static_cast<std::size_t>(i));
    if (p + 64 * 1024 > other_start && p < other_start + 4096)
      finish(1, "a block overlaps the other mapping", static_cast<std::size_t>(i));
    p[0] = p[64 * 1024 - 1] = 1;
    blocks.push_back(p);
  }
  for (std::uint8_t* p : blocks) strata_free(p);
  strata_free(first);
  finish(0, "", 0);
}

// Skips a test where segments do not start small: secure mode (its guard ends
// each range) and an up-front arena (cut in whole segments) map them whole.
#define SKIP_UNLESS_SEGMENTS_START_SMALL()                 \
  if (strata_option_get(STRATA_OPTION_SECURE) != 0 ||      \
      strata_option_get(STRATA_OPTION_ARENA_RESERVE) != 0) \
  GTEST_SKIP() << "segments are mapped whole"

}  // namespace

TEST(SmallStart, AFewKiBMapLittleAddressSpace) {
  SKIP_UNLESS_SEGMENTS_START_SMALL();
  EXPECT_EXIT(map_for_a_few_kib(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, AFewKiBTouchAPageAClass) {
  if (strata::os::huge_pages_always() || strata_option_get(STRATA_OPTION_LARGE_OS_PAGES) != 0)
    GTEST_SKIP() << "segments may be backed by huge pages";
  SKIP_UNLESS_SEGMENTS_START_SMALL();
  if (strata_option_get(STRATA_OPTION_DEBUG) != 0) GTEST_SKIP() << "debug mode's fills and guards";
  EXPECT_EXIT(touch_a_few_kib(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, ASmallHeapCarvesAnOsPageAtATime) {
  if (strata::os::huge_pages_always() || strata_option_get(STRATA_OPTION_LARGE_OS_PAGES) != 0)
    GTEST_SKIP() << "segments may be backed by huge pages";
  if (strata_option_get(STRATA_OPTION_SECURE) != 0 || strata_option_get(STRATA_OPTION_DEBUG) != 0)
    GTEST_SKIP() << "checked pages carve otherwise";
  EXPECT_EXIT(carve_a_page_at_a_time(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, ASmallHeapGivesAOneBlockPageBackAtOnce) {
  if (strata_option_get(STRATA_OPTION_PURGE_DELAY_MS) < 0) GTEST_SKIP() << "never purges";
  if (strata_option_get(STRATA_OPTION_SECURE) != 0 || strata_option_get(STRATA_OPTION_DEBUG) != 0)
    GTEST_SKIP() << "checked pages";
  EXPECT_EXIT(give_a_one_block_page_back(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, NoPurgeThreadUntilMemoryWaits) {
  if (strata_option_get(STRATA_OPTION_PURGE_THREAD) == 0) GTEST_SKIP() << "STRATA_PURGE_THREAD=0";
  EXPECT_EXIT(start_the_purge_thread_late(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, NoPurgeThreadForASmallHeap) {
  if (strata_option_get(STRATA_OPTION_PURGE_THREAD) == 0) GTEST_SKIP() << "STRATA_PURGE_THREAD=0";
  EXPECT_EXIT(purge_a_small_heap_without_the_thread(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, SmallBlocksFillATightLimit) {
  if (under_sanitizer) GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's shadow";
  SKIP_UNLESS_SEGMENTS_START_SMALL();
  if (strata_option_get(STRATA_OPTION_DEBUG) != 0) GTEST_SKIP() << "debug blocks are padded";
  EXPECT_EXIT(fill_a_tight_limit(), ::testing::ExitedWithCode(0), "");
}

TEST(SmallStart, AnotherMappingInsideTheFirstSegmentsRange) {
  SKIP_UNLESS_SEGMENTS_START_SMALL();
  EXPECT_EXIT(share_a_segment_range(), ::testing::ExitedWithCode(0), "");
}
