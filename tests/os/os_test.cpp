// Tests of the OS layer: alignment, purge, RSS, failure reporting and injection.
#include "os/os.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

namespace os = strata::os;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
bool aligned_to(void* p, std::size_t a) {
  return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}
}  // namespace

TEST(Os, PageSizes) {
  EXPECT_GE(os::page_size(), 4096u);
  EXPECT_EQ(os::page_size() & (os::page_size() - 1), 0u);
  EXPECT_GE(os::huge_page_size(), os::page_size());
}

TEST(Os, ReserveHonoursAlignment) {
  for (std::size_t align : {os::page_size(), std::size_t{64} << 10, 2 * MiB, 32 * MiB}) {
    void* p = os::reserve_aligned(32 * MiB, align, true);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned_to(p, align)) << align;
    std::memset(p, 0xab, 4096);  // usable
    static_cast<char*>(p)[32 * MiB - 1] = 1;
    EXPECT_TRUE(os::release(p, 32 * MiB));
  }
}

// Sizes that are not multiples of the alignment, foreign mappings in between and
// ranges given back meanwhile: every path of reserve_aligned must still hand out
// aligned, usable, disjoint ranges.
TEST(Os, ReserveStaysAlignedAmongOtherMappings) {
  constexpr std::size_t align = 32 * MiB;
  constexpr int rounds = 24;
  void* ranges[rounds];
  std::size_t sizes[rounds];
  void* foreign[rounds];
  for (int i = 0; i < rounds; ++i) {
    foreign[i] = os::reserve_aligned(MiB, os::page_size(), false);
    ASSERT_NE(foreign[i], nullptr);
    sizes[i] = (i % 3 == 0 ? align : (9 + 5 * i % 40) * MiB) + os::page_size() * (i % 4);
    ranges[i] = os::reserve_aligned(sizes[i], align, true);
    ASSERT_NE(ranges[i], nullptr) << i;
    EXPECT_TRUE(aligned_to(ranges[i], align)) << i;
    static_cast<char*>(ranges[i])[0] = 1;
    static_cast<char*>(ranges[i])[sizes[i] - 1] = 1;
    if (i % 4 == 3) {  // give one back: the next reservation may take its place
      ASSERT_TRUE(os::release(ranges[i - 1], sizes[i - 1]));
      ranges[i - 1] = nullptr;
    }
  }
  for (int i = 0; i < rounds; ++i) {
    for (int j = i + 1; j < rounds && ranges[i] != nullptr; ++j) {
      if (ranges[j] == nullptr) continue;
      auto a = reinterpret_cast<std::uintptr_t>(ranges[i]);
      auto b = reinterpret_cast<std::uintptr_t>(ranges[j]);
      EXPECT_TRUE(a + sizes[i] <= b || b + sizes[j] <= a) << i << " overlaps " << j;
    }
  }
  for (int i = 0; i < rounds; ++i) {
    if (ranges[i] != nullptr) {
      EXPECT_TRUE(os::release(ranges[i], sizes[i]));
    }
    EXPECT_TRUE(os::release(foreign[i], MiB));
  }
}

TEST(Os, BadAlignmentIsRejected) {
  EXPECT_EQ(os::reserve_aligned(MiB, 3 * 4096, true), nullptr);
  EXPECT_EQ(os::last_failure().error, EINVAL);
}

TEST(Os, HugeReservationFailsCleanly) {
  // Far beyond any machine's address space budget: must fail, not abort.
  void* p = os::reserve_aligned(std::size_t{1} << 62, 32 * MiB, true);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(os::last_failure().error, ENOMEM);
  EXPECT_STREQ(os::last_failure().call, "reserve");
}

TEST(Os, PurgedMemoryReadsZeroAndRssDrops) {
  const std::size_t size = 64 * MiB;
  auto* p = static_cast<unsigned char*>(os::reserve_aligned(size, 2 * MiB, true));
  ASSERT_NE(p, nullptr);
  std::size_t before = os::current_rss();
  std::memset(p, 0x5a, size);
  std::size_t touched = os::current_rss();
  EXPECT_GE(touched, before + size / 2);
  ASSERT_TRUE(os::purge(p, size, os::purge_mode::dont_need));
  std::size_t after = os::current_rss();
  EXPECT_LE(after + size / 2, touched);
  for (std::size_t i = 0; i < size; i += 4096) ASSERT_EQ(p[i], 0) << i;
  EXPECT_GE(os::peak_rss() + MiB, touched);
  os::release(p, size);
}

TEST(Os, LazyFreeKeepsRangeUsable) {
  auto* p = static_cast<unsigned char*>(os::reserve_aligned(MiB, os::page_size(), true));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, MiB);
  EXPECT_TRUE(os::purge(p, MiB, os::purge_mode::lazy_free));
  p[0] = 7;  // still mapped and writable
  EXPECT_EQ(p[0], 7);
  os::release(p, MiB);
}

TEST(Os, CommitDecommitAndProtect) {
  auto* p = static_cast<unsigned char*>(os::reserve_aligned(MiB, os::page_size(), false));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(os::commit(p, MiB));
  p[100] = 9;
  ASSERT_TRUE(os::decommit(p, MiB));
  ASSERT_TRUE(os::commit(p, MiB));
  EXPECT_EQ(p[100], 0);  // decommitted memory comes back zeroed
  ASSERT_TRUE(os::protect(p, os::page_size()));
  EXPECT_DEATH(p[0] = 1, "");  // a guard page traps
  ASSERT_TRUE(os::unprotect(p, os::page_size()));
  p[0] = 1;
  EXPECT_TRUE(os::hint_huge_pages(p, MiB) || os::last_failure().error == EINVAL);
  os::release(p, MiB);
}

TEST(Os, ExtendInPlace) {
  // Reserve a range, release its upper half, then grow the lower half back over it.
  auto* p = static_cast<char*>(os::reserve_aligned(4 * MiB, os::page_size(), true));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(os::release(p + 2 * MiB, 2 * MiB));
  EXPECT_TRUE(os::extend_in_place(p, 2 * MiB, 4 * MiB));
  p[4 * MiB - 1] = 1;
  os::release(p, 4 * MiB);
}

TEST(Os, InjectedFailuresSurface) {
  os::inject_failure(2);  // the second call from now fails
  void* a = os::reserve_aligned(MiB, os::page_size(), true);
  ASSERT_NE(a, nullptr);
  void* b = os::reserve_aligned(MiB, os::page_size(), true);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(os::last_failure().error, ECANCELED);
  void* c = os::reserve_aligned(MiB, os::page_size(), true);  // disarmed after firing
  EXPECT_NE(c, nullptr);
  os::inject_failure(1);
  EXPECT_FALSE(os::purge(a, MiB, os::purge_mode::dont_need));
  os::release(a, MiB);
  os::release(c, MiB);
}

TEST(Os, CallsAreCounted) {
  std::uint64_t before = os::call_count();
  void* p = os::reserve_aligned(MiB, os::page_size(), true);
  os::release(p, MiB);
  EXPECT_EQ(os::call_count(), before + 2);
}

TEST(Os, ThreadIdsAreDistinct) {
  std::uintptr_t mine = os::thread_id();
  EXPECT_NE(mine, 0u);
  EXPECT_EQ(mine, os::thread_id());
  std::uintptr_t other = 0;
  std::thread([&] { other = os::thread_id(); }).join();
  EXPECT_NE(other, 0u);
  EXPECT_NE(other, mine);
}
