// Under an address-space limit (RLIMIT_AS, `ulimit -v`) the heap serves what the
// limit leaves room for, then answers NULL + ENOMEM, never crashes, and serves
// again once blocks are freed: from one thread and from threads racing.
#include <pthread.h>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "address_limit.hpp"
#include "child_process.hpp"
#include "os/os.hpp"
#include "strata/strata.h"

namespace {

using namespace strata_limits;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t headroom = 64 * MiB;
constexpr std::size_t block_size = 16;

// A 16-byte block chained to the one allocated before it: the chain costs no
// memory outside the heap, which an address-space limit would also count.
struct chained_block {
  chained_block* next;
  std::uintptr_t tag;
};
static_assert(sizeof(chained_block) == block_size);

std::uintptr_t tag_of(const chained_block* l, std::uintptr_t salt) {
  return (reinterpret_cast<std::uintptr_t>(l) * 0x9E3779B97F4A7C15u) ^ salt;
}

// Allocate blocks until the heap says no (or `most` are served); returns how
// many were served, the chain in `*chain`, and the errno of the refusal.
std::size_t allocate_until_refused(chained_block** chain, std::size_t most, std::uintptr_t salt,
                                   int* error) {
  std::size_t served = 0;
  *error = 0;
  while (served < most) {
    errno = 0;
    auto* l = static_cast<chained_block*>(strata_malloc(block_size));
    if (l == nullptr) {
      *error = errno;
      break;
    }
    l->next = *chain;
    l->tag = tag_of(l, salt);
    *chain = l;
    ++served;
  }
  return served;
}

// Free a chain, checking each block still holds what was written into it;
// returns the number of blocks whose contents changed.
std::size_t free_chain(chained_block* chain, std::uintptr_t salt) {
  std::size_t damaged = 0;
  while (chain != nullptr) {
    chained_block* next = chain->next;
    if (chain->tag != tag_of(chain, salt)) ++damaged;
    strata_free(chain);
    chain = next;
  }
  return damaged;
}

std::size_t segments_mapped() {
  strata_stats_t s;
  strata_stats_get(&s);
  return s.segments;
}

}  // namespace

// An aligned reservation needs no more than its size of address space: a
// 32 MiB-aligned 32 MiB range fits under a limit that leaves 40 MiB, whatever
// lies around it, and one that cannot fit fails cleanly with ENOMEM.
TEST(AddressSpace, AlignedReservationFitsInItsOwnSize) {
  if (under_sanitizer) GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's shadow";
  int code = run_in_child([] {
    namespace os = strata::os;
    LIMITS_CHECK(limit_address_space(40 * MiB));
    for (int round = 0; round < 8; ++round) {
      // A page mapped in between moves where the kernel would put the next range.
      void* page = os::reserve_aligned(os::page_size(), os::page_size(), false);
      LIMITS_CHECK(page != nullptr);
      std::size_t size = 32 * MiB - round * 3 * os::page_size();
      void* p = os::reserve_aligned(size, 32 * MiB, true);
      LIMITS_CHECK(p != nullptr);
      LIMITS_CHECK((reinterpret_cast<std::uintptr_t>(p) & (32 * MiB - 1)) == 0);
      static_cast<char*>(p)[size - 1] = 1;
      LIMITS_CHECK(os::release(p, size));
    }
    LIMITS_CHECK(os::reserve_aligned(48 * MiB, 32 * MiB, true) == nullptr);
    LIMITS_CHECK(os::last_failure().error == ENOMEM);
    return child_ok;
  });
  EXPECT_EQ(code, child_ok);
}

// One thread allocates 16-byte blocks until the limit stops it: it must have
// been served most of the headroom, get NULL + ENOMEM, and after freeing
// everything be served as many blocks again.
TEST(AddressSpace, ExhaustionFromOneThread) {
  if (under_sanitizer) GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's shadow";
  int code = run_in_child([] {
    strata_free(strata_malloc(block_size));  // the thread's heap and first segment exist
    std::size_t segments_before = segments_mapped();
    LIMITS_CHECK(limit_address_space(headroom));
    chained_block* chain = nullptr;
    int error = 0;
    std::size_t served = allocate_until_refused(&chain, SIZE_MAX, 1, &error);
    LIMITS_CHECK(error == ENOMEM);
    LIMITS_CHECK(served * block_size >= headroom / 10 * 6);
    // Two more 32 MiB segments fit in 64 MiB only if each needed just its size.
    LIMITS_CHECK(segments_mapped() >= segments_before + 2);
    errno = 0;
    LIMITS_CHECK(strata_malloc(MiB) == nullptr && errno == ENOMEM);
    LIMITS_CHECK(free_chain(chain, 1) == 0);
    strata_collect(1);
    chain = nullptr;
    std::size_t again = allocate_until_refused(&chain, served, 2, &error);
    LIMITS_CHECK(again == served);
    LIMITS_CHECK(free_chain(chain, 2) == 0);
    return child_ok;
  });
  EXPECT_EQ(code, child_ok);
}

// Four threads race to exhaustion, then each frees its neighbour's blocks
// (frees from another thread, after the limit was hit) and allocates again.
TEST(AddressSpace, ExhaustionFromRacingThreads) {
  if (under_sanitizer) GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's shadow";
  int code = run_in_child([] {
    constexpr int threads = 4;
    pthread_barrier_t limit_set, among;  // with the main thread; among the workers
    pthread_barrier_init(&limit_set, nullptr, threads + 1);
    pthread_barrier_init(&among, nullptr, threads);
    chained_block* chains[threads] = {};
    std::size_t served[threads] = {};
    std::size_t again[threads] = {};
    int errors[threads] = {};
    std::size_t damaged[threads] = {};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        strata_free(strata_malloc(block_size));  // each thread's heap exists before the limit
        pthread_barrier_wait(&limit_set);
        pthread_barrier_wait(&limit_set);
        served[t] = allocate_until_refused(&chains[t], SIZE_MAX, t, &errors[t]);
        pthread_barrier_wait(&among);  // every thread is refused
        int neighbour = (t + 1) % threads;
        damaged[t] = free_chain(chains[neighbour], neighbour);
        pthread_barrier_wait(&among);
        chained_block* chain = nullptr;
        int error = 0;
        again[t] = allocate_until_refused(&chain, served[t], t, &error);
        damaged[t] += free_chain(chain, t);
      });
    }
    pthread_barrier_wait(&limit_set);
    bool limited = limit_address_space(headroom);
    pthread_barrier_wait(&limit_set);
    for (std::thread& w : workers) w.join();
    LIMITS_CHECK(limited);
    std::size_t total = 0, total_again = 0;
    for (int t = 0; t < threads; ++t) {
      LIMITS_CHECK(errors[t] == ENOMEM);
      LIMITS_CHECK(damaged[t] == 0);
      total += served[t];
      total_again += again[t];
    }
    LIMITS_CHECK(total * block_size >= headroom / 10 * 6);
    // Each thread's blocks, freed by its neighbour, serve it again.
    LIMITS_CHECK(total_again >= total / 2);
    return child_ok;
  });
  EXPECT_EQ(code, child_ok);
}

// Memory freed in one shape must serve another under the limit: huge blocks
// freed and collected leave room for small ones, and small blocks freed and
// collected leave room for a huge one. The heap's caches keep emptied segments
// mapped, so this holds only if a refused reservation gives the cached ones back.
TEST(AddressSpace, FreedMemoryServesOtherShapes) {
  if (under_sanitizer) GTEST_SKIP() << "an address-space limit cannot hold a sanitizer's shadow";
  int code = run_in_child([] {
    strata_free(strata_malloc(block_size));
    LIMITS_CHECK(limit_address_space(headroom));
    // Huge blocks until refused, all freed: the small blocks after them need
    // that address space back.
    std::vector<void*> huge;
    huge.reserve(64);
    while (huge.size() < 64) {
      void* p = strata_malloc(12 * MiB);
      if (p == nullptr) break;
      huge.push_back(p);
    }
    LIMITS_CHECK(!huge.empty() && huge.size() < 64);
    for (void* p : huge) strata_free(p);
    strata_collect(1);
    chained_block* chain = nullptr;
    int error = 0;
    std::size_t served = allocate_until_refused(&chain, SIZE_MAX, 3, &error);
    bool small_after_huge = served * block_size >= headroom / 10 * 6;
    LIMITS_CHECK(free_chain(chain, 3) == 0);
    strata_collect(1);
    // And the other way: small blocks freed leave room for a huge one.
    void* big = strata_malloc(40 * MiB);
    bool huge_after_small = big != nullptr;
    strata_free(big);
    if (!small_after_huge || !huge_after_small)
      std::fprintf(stderr,
                   "small blocks after huge ones: %zu MiB; a 40 MiB block after small: %s\n",
                   served * block_size / MiB, huge_after_small ? "served" : "refused");
    LIMITS_CHECK(small_after_huge && huge_after_small);
    return child_ok;
  });
  EXPECT_EQ(code, child_ok);
}
