// Every OS memory call the heap makes can fail. These tests sweep an injected
// failure (os::inject_failure: the nth call from now fails with ECANCELED) over
// each call of a fixed workload in turn, in a fresh child process each time:
// every allocation must answer a block or NULL + ENOMEM (never a crash, never
// a block handed out twice), and once the failure is past the heap must be
// whole: contents intact, blocks disjoint, statistics adding up, and freeing
// everything and allocating again working.
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "child_process.hpp"
#include "os/os.hpp"
#include "shadow_heap.hpp"
#include "strata/strata.h"

namespace {

using namespace strata_limits;
namespace os = strata::os;

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr int child_not_reached = 2;  // the workload made fewer OS calls than n
constexpr int workload_ops = 160;
constexpr std::size_t most_live = 48;

// One allocation's outcome checked: a block is recorded in the shadow, a NULL
// must come with ENOMEM (errno, or the code of posix_memalign) after the
// injected failure fired, and only once per failure.
struct outcome_checker {
  shadow_heap& shadow;
  std::uint64_t start_calls;
  std::uint64_t nth;
  int refusals = 0;

  bool fired() const { return os::call_count() - start_calls >= nth; }
  bool refused(int error) {
    ++refusals;
    return error == ENOMEM && fired() && refusals == 1;
  }
};

std::size_t log_uniform(std::mt19937_64& rng, std::size_t low, std::size_t high) {
  std::uniform_real_distribution<double> exponent(std::log2(double(low)), std::log2(double(high)));
  return static_cast<std::size_t>(std::exp2(exponent(rng)));
}

// A size for the next block: small, medium (4 KiB - 8 MiB) or huge (> 8 MiB).
std::size_t pick_size(std::mt19937_64& rng) {
  unsigned kind = rng() % 20;
  if (kind < 12) return 1 + rng() % 1024;
  if (kind < 18) return log_uniform(rng, 4 * KiB, 8 * MiB);
  return log_uniform(rng, 8 * MiB + 1, 40 * MiB);
}

// The fixed workload: mallocs, callocs, aligned allocations, reallocs that grow
// huge blocks (mremap) and shrink others, frees and forced collections (madvise).
int run_workload(shadow_heap& shadow, outcome_checker& check) {
  std::mt19937_64 rng(20261124);
  for (int op = 0; op < workload_ops; ++op) {
    unsigned kind = rng() % 100;
    std::uint64_t seed = rng();
    bool full = shadow.count() >= most_live;
    if (kind < 40 && !full) {
      std::size_t size = pick_size(rng);
      errno = 0;
      void* p = kind < 34 ? strata_malloc(size) : strata_calloc(1, size < 4 * MiB ? size : 4 * MiB);
      if (kind >= 34 && size > 4 * MiB) size = 4 * MiB;
      if (p == nullptr) {
        LIMITS_CHECK(check.refused(errno));
        continue;
      }
      LIMITS_CHECK(strata_usable_size(p) >= size);
      if (kind >= 34) {
        const auto* bytes = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < size; i += 997) LIMITS_CHECK(bytes[i] == 0);
      }
      LIMITS_CHECK(shadow.add(p, size, seed));
    } else if (kind < 55 && !full) {
      std::size_t alignment = std::size_t{1} << (4 + rng() % 21);  // 16 B .. 16 MiB
      std::size_t size = pick_size(rng);
      void* p = nullptr;
      if (kind < 50) {
        errno = 0;
        p = strata_malloc_aligned(size, alignment);
        if (p == nullptr) {
          LIMITS_CHECK(check.refused(errno));
          continue;
        }
      } else {
        int error = strata_posix_memalign(&p, alignment, size);
        if (error != 0) {
          LIMITS_CHECK(check.refused(error));
          continue;
        }
      }
      LIMITS_CHECK((reinterpret_cast<std::uintptr_t>(p) & (alignment - 1)) == 0);
      LIMITS_CHECK(shadow.add(p, size, seed));
    } else if (kind < 70 && shadow.count() != 0) {
      void* p = shadow.at(rng() % shadow.count());
      std::size_t old_size = shadow.size_of(p);
      // Huge blocks mostly grow (in place or by mremap); others grow or shrink.
      std::size_t size = old_size > 8 * MiB && rng() % 4 != 0
                             ? old_size + log_uniform(rng, 4 * KiB, 16 * MiB)
                             : pick_size(rng);
      errno = 0;
      void* q = strata_realloc(p, size);
      if (q == nullptr) {
        LIMITS_CHECK(check.refused(errno));
        LIMITS_CHECK(shadow.intact(p));  // a failed realloc leaves the block as it was
        continue;
      }
      LIMITS_CHECK(shadow.carried(p, q, size));
      shadow.remove(p);
      LIMITS_CHECK(shadow.add(q, size, seed));
    } else if (kind < 97 && shadow.count() != 0) {
      void* p = shadow.at(rng() % shadow.count());
      LIMITS_CHECK(shadow.intact(p));
      shadow.remove(p);
      strata_free(p);
    } else {
      strata_collect(1);
    }
  }
  return child_ok;
}

// The heap's counters against the shadow: as many blocks live as the test
// holds, and at least their bytes in use.
int check_stats(const shadow_heap& shadow, const strata_stats_t& before) {
  strata_stats_t now;
  strata_stats_get(&now);
  LIMITS_CHECK(now.mallocs - before.mallocs - (now.frees - before.frees) == shadow.count());
  LIMITS_CHECK(now.in_use - before.in_use >= shadow.bytes());
  LIMITS_CHECK(now.huge_in_use <= now.in_use);
  LIMITS_CHECK(now.committed <= now.reserved);
  LIMITS_CHECK(now.segments_cached <= now.segments);
  std::uint64_t class_live = 0;
  for (std::size_t c = 0; c < STRATA_SIZE_CLASSES; ++c) {
    LIMITS_CHECK(now.class_mallocs[c] >= now.class_frees[c]);
    class_live += now.class_mallocs[c] - now.class_frees[c];
  }
  LIMITS_CHECK(class_live <= now.mallocs - now.frees);
  return child_ok;
}

// One run: the nth OS call from the start fails; then the heap must be whole.
int run_with_failure(std::uint64_t nth, long purge_delay_ms, bool secure) {
  strata_option_set(STRATA_OPTION_PURGE_THREAD, 0);  // no OS calls but the workload's
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, purge_delay_ms);
  strata_option_set(STRATA_OPTION_SECURE, secure ? 1 : 0);
  strata_stats_t before;
  strata_stats_get(&before);
  shadow_heap shadow;
  outcome_checker check{shadow, os::call_count(), nth};
  os::inject_failure(nth);
  int code = run_workload(shadow, check);
  bool fired = check.fired();
  os::inject_failure(0);
  if (code != child_ok) return code;
  // Whole again: every block intact, the counters right, and all of it reusable.
  for (std::size_t i = 0; i < shadow.count(); ++i) LIMITS_CHECK(shadow.intact(shadow.at(i)));
  if (check_stats(shadow, before) != child_ok) return child_failed;
  while (shadow.count() != 0) {
    void* p = shadow.at(0);
    shadow.remove(p);
    strata_free(p);
  }
  strata_collect(1);
  if (check_stats(shadow, before) != child_ok) return child_failed;
  std::mt19937_64 rng(nth);
  for (int i = 0; i < 24; ++i) {
    std::size_t size = pick_size(rng);
    void* p = i % 3 == 0 ? strata_malloc_aligned(size, std::size_t{1} << (4 + i % 21))
                         : strata_malloc(size);
    LIMITS_CHECK(p != nullptr);
    LIMITS_CHECK(shadow.add(p, size, rng()));
  }
  for (std::size_t i = 0; i < shadow.count(); ++i) LIMITS_CHECK(shadow.intact(shadow.at(i)));
  while (shadow.count() != 0) {
    void* p = shadow.at(0);
    shadow.remove(p);
    strata_free(p);
  }
  if (check_stats(shadow, before) != child_ok) return child_failed;
  return fired ? child_ok : child_not_reached;
}

// Sweep the failure over every OS call of the workload; returns how many calls
// were covered and reports each n that broke the heap.
std::uint64_t sweep(long purge_delay_ms, bool secure = false) {
  std::uint64_t covered = 0;
  int broken = 0;
  for (std::uint64_t nth = 1; nth < 5000 && broken < 5; ++nth) {
    int code = run_in_child([&] { return run_with_failure(nth, purge_delay_ms, secure); });
    if (code == child_not_reached) break;
    if (code != child_ok) {
      ++broken;
      ADD_FAILURE() << "OS call " << nth << " failing broke the heap (child exit " << code << ")";
    }
    covered = nth;
  }
  return covered;
}

}  // namespace

// Memory that empties is purged at once (purge delay 0): the most OS calls.
TEST(FaultInjection, EveryOsCallFailingOnceLeavesTheHeapWhole) {
  std::uint64_t covered = sweep(0);
  EXPECT_GE(covered, 20u);
  std::printf("%llu OS calls failed in turn\n", static_cast<unsigned long long>(covered));
}

// Memory waits in the caches and goes back only in forced collections.
TEST(FaultInjection, EveryOsCallFailingOnceWithCachedMemory) {
  std::uint64_t covered = sweep(60000);
  EXPECT_GE(covered, 10u);
  std::printf("%llu OS calls failed in turn\n", static_cast<unsigned long long>(covered));
}

// Secure mode (guard pages: mprotect calls of its own) fails as cleanly.
TEST(FaultInjection, EveryOsCallFailingOnceInSecureMode) {
  std::uint64_t covered = sweep(0, true);
  EXPECT_GE(covered, 20u);
  std::printf("%llu OS calls failed in turn\n", static_cast<unsigned long long>(covered));
}

// With no failure injected the workload never hits NULL: every refusal the
// sweeps see comes from their injected failure.
TEST(FaultInjection, WorkloadRunsCleanWithoutFailures) {
  int code = run_in_child([] { return run_with_failure(UINT64_MAX / 2, 0, false); });
  EXPECT_EQ(code, child_not_reached);
}
