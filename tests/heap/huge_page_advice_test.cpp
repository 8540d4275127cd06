// Huge-page advice: a heap that fills fresh memory densely gets MADV_HUGEPAGE
// on it, one whose pages are partly used does not, and memory advised so still
// goes back to the OS.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "option_for_test.hpp"
#include "os/os.hpp"
#include "strata/strata.h"

namespace os = strata::os;
using strata_test_heap::option_for_test;
constexpr std::size_t MiB = std::size_t{1} << 20;

namespace {

// Whether the kernel backs only advised ranges with huge pages (mode "madvise").
bool huge_pages_on_advice() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(in, modes);
  return modes.find("[madvise]") != std::string::npos;
}

// The mappings of this process that carry MADV_HUGEPAGE ("hg" in VmFlags).
struct advised_ranges {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;

  advised_ranges() {
    std::ifstream in("/proc/self/smaps");
    std::uintptr_t start = 0, end = 0;
    for (std::string line; std::getline(in, line);) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
        start = lo;
        end = hi;
      } else if (line.rfind("VmFlags:", 0) == 0 && line.find(" hg") != std::string::npos) {
        ranges.emplace_back(start, end);
      }
    }
  }
  bool contain(const void* p) const {
    auto at = reinterpret_cast<std::uintptr_t>(p);
    for (auto [start, end] : ranges)
      if (at >= start && at < end) return true;
    return false;
  }
};

// How many of `blocks` lie in advised mappings.
std::size_t advised_count(const std::vector<void*>& blocks) {
  advised_ranges advised;
  std::size_t n = 0;
  for (void* p : blocks) n += advised.contain(p);
  return n;
}

}  // namespace

// Skips a test where advice cannot be seen or is not the heap's to give.
#define SKIP_UNLESS_ADVICE_APPLIES()                                                         \
  if (!huge_pages_on_advice()) GTEST_SKIP() << "transparent huge pages not in madvise mode"; \
  if (strata_option_get(STRATA_OPTION_SECURE) != 0 ||                                        \
      strata_option_get(STRATA_OPTION_LARGE_OS_PAGES) != 0)                                  \
  GTEST_SKIP() << "segments mapped whole or all advised"

TEST(HugePageAdvice, PartlyUsedPagesGetNone) {
  SKIP_UNLESS_ADVICE_APPLIES();
  option_for_test any_heap(STRATA_OPTION_HUGE_PAGES_AFTER, 1);  // density alone decides
  strata_collect(1);  // emptied segments cut back to their first step: fresh memory past it
  std::size_t advised = 1;
  std::thread([&] {
    // One block of each of the classes to 60 KB: over 5 MiB of pages, each all but empty.
    std::vector<void*> blocks;
    for (std::size_t size = 16; size < 60000; size = size * 9 / 8 + 16) {
      blocks.push_back(strata_malloc(size));
      std::memset(blocks.back(), 1, size);
    }
    advised = advised_count(blocks);
    for (void* p : blocks) strata_free(p);
  }).join();
  EXPECT_EQ(advised, 0u) << "pages with one block each are no reason for huge pages";
}

// Pages of 4 KiB blocks and up are carved whole as they are set up: a thread
// fills the first 2 MiB of its segment (as the heap lays it out most runs) with
// pages of 8 KiB blocks, frees seven in eight, then takes a 16 KiB block, whose
// page begins the next 2 MiB.
TEST(HugePageAdvice, PagesCarvedWholeButMostlyFreeGetNone) {
  SKIP_UNLESS_ADVICE_APPLIES();
  if (strata_option_get(STRATA_OPTION_DEBUG) != 0)
    GTEST_SKIP() << "a debug block's record moves 8 KiB to a class of 7 blocks a page";
  option_for_test any_heap(STRATA_OPTION_HUGE_PAGES_AFTER, 1);
  strata_collect(1);
  std::size_t advised = 1;
  std::thread([&] {
    std::vector<void*> blocks(8 * 30);  // 30 pages: the first huge page past the header
    for (void*& p : blocks) p = strata_malloc(8192);
    for (std::size_t i = 0; i < blocks.size(); ++i)
      if (i % 8 != 0) strata_free(std::exchange(blocks[i], nullptr));
    std::vector<void*> next(4);
    for (void*& p : next) {
      p = strata_malloc(16384);
      std::memset(p, 1, 16384);
    }
    advised = advised_count(next);
    for (void* p : next) strata_free(p);
    for (void* p : blocks) strata_free(p);
  }).join();
  EXPECT_EQ(advised, 0u) << "pages holding one block in eight are no reason for huge pages";
}

TEST(HugePageAdvice, DenseFillIsAdvisedAndStillGivenBack) {
  SKIP_UNLESS_ADVICE_APPLIES();
  option_for_test four_mib(STRATA_OPTION_HUGE_PAGES_AFTER, 4 * MiB);
  strata_collect(1);
  std::size_t before = os::current_rss();
  std::size_t advised = 0, peak = 0;
  constexpr int count = 12000;  // 48 MiB of 4 KiB blocks, each written
  std::thread([&] {
    std::vector<void*> blocks(count);
    for (void*& p : blocks) {
      p = strata_malloc(4096);
      std::memset(p, 1, 4096);
    }
    advised = advised_count(blocks);
    peak = os::current_rss();
    for (void* p : blocks) strata_free(p);
  }).join();
  strata_collect(1);
  std::size_t after = os::current_rss();
  EXPECT_GE(advised, count * 3u / 4) << "past the first huge pages, a dense fill is advised";
  EXPECT_GE(peak, before + 40 * MiB);
  EXPECT_LE(after, before + 8 * MiB) << "advised memory must still go back to the OS";
}
