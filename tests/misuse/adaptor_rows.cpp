// Misuse rows of the adaptors (tracking, limiting, statistics, logging,
// synchronized, aligned, failure_callback), each over the strata heap: an
// adaptor answers what it checks itself, and passes the rest to its upstream,
// whose answer (the heap's) is the row's.
#include <gtest/gtest.h>

#include <strata/aligned.hpp>
#include <strata/failure_callback.hpp>
#include <strata/limiting.hpp>
#include <strata/logging.hpp>
#include <strata/statistics.hpp>
#include <strata/synchronized.hpp>
#include <strata/tracking.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;
using heap = strata::heap_resource;

constexpr const char* section = "Adaptors";
constexpr const char* no_destroy_check =
    "not checked: every call of an adaptor is its fast path, forwarding to the upstream it holds "
    "by value, with no slow path that could read a lifetime word; a check would cost a load and "
    "a compare on every call (a block freed after destruction still reaches the heap's checks)";
constexpr const char* double_freed = "strata: heap corruption: double free";
constexpr const char* not_strata =
    "strata: heap corruption: free of a pointer strata did not allocate";
constexpr const char* not_handed_out =
    "strata: heap corruption: free of a pointer strata did not hand out";

// How a row makes its adaptor, and what it says after a deallocate(nullptr, n).
template <class Adaptor>
struct maker {
  std::function<std::unique_ptr<Adaptor>()> make;
  std::function<void(Adaptor&)> unchanged;  // EXPECTs that no count moved
};

// What the adaptor checks itself, where it does not pass a free on.
struct own_checks {
  std::string foreign;      // empty: the heap's answer
  std::string double_free;  // empty: the heap's answer
};

template <class Adaptor>
row adaptor_row(const char* api, const char* header, maker<Adaptor> m, own_checks own) {
  auto make = m.make;
  std::string foreign = own.foreign.empty() ? not_strata : own.foreign;
  std::string interior = own.foreign.empty() ? not_handed_out : own.foreign;
  std::string doubled = own.double_free.empty() ? double_freed : own.double_free;
  std::vector<cell> cells = {
      returns(null_argument, "deallocate(nullptr, n) is a no-op: nothing counted or forwarded",
              {[m] {
                auto a = m.make();
                a->deallocate(nullptr, 100);
                a->deallocate(a->allocate(64), 64);
                m.unchanged(*a);
              }}),
      returns(zero_size, "a block", {[make] {
                auto a = make();
                void* p = a->allocate(0);
                EXPECT_NE(p, nullptr);
                a->deallocate(p, 0);
              }}),
      throws<std::bad_alloc>(huge_size, "std::bad_alloc (limiting: limit_exceeded, one)", "",
                             {[make] {
                               auto a = make();
                               (void)a->allocate(SIZE_MAX / 2);
                             }}),
      throws<std::invalid_argument>(bad_alignment, "std::invalid_argument", "is not a power of two",
                                    {[make] {
                                      auto a = make();
                                      (void)a->allocate(64, 24);
                                    }}),
      aborts(foreign_pointer, foreign, {[make] {
               auto a = make();
               a->deallocate(c_library_block(), 64);
             }}),
      aborts(interior_pointer, interior, {[make] {
               auto a = make();
               void* p = a->allocate(64);
               a->deallocate(static_cast<char*>(p) + 16, 48);
             }}),
      aborts(double_free, doubled, {[make] {
               auto a = make();
               void* p = a->allocate(64);
               a->deallocate(p, 64);
               a->deallocate(p, 64);
             }}),
      unchecked(use_after_destroy, no_destroy_check),
      unchecked(destroy_twice, no_destroy_check),
  };
  cells.push_back(returns(wrong_thread, "freed: any thread may use it", {[make] {
                            auto a = make();
                            void* p = a->allocate(64);
                            on_another_thread([&a, p] { a->deallocate(p, 64); });
                          }}));
  cells.push_back(racing(aborts(racing_free, doubled, {[make] {
                                  auto a = make();
                                  void* p = a->allocate(64);
                                  void* keep = a->allocate(64);
                                  auto free_it = [&a, p] {
                                    a->deallocate(p, 64);
                                    strata_collect(0);
                                  };
                                  at_once(free_it, free_it);
                                  both_frees_accepted("adaptor deallocate");
                                  a->deallocate(keep, 64);
                                }})));
  if (own.foreign.empty()) {
    cells.push_back(
        returns(other_instance, "freed: adaptors over one heap share its blocks", {[make] {
                  auto one = make();
                  auto other = make();
                  one->deallocate(other->allocate(64), 64);
                }}));
  } else {
    cells.push_back(aborts(other_instance, own.foreign, {[make] {
                             auto one = make();
                             auto other = make();
                             one->deallocate(other->allocate(64), 64);
                           }}));
  }
  return {api, header, section, cells};
}

using tracked = strata::tracking<heap, true>;

// Sampled tracking keeps no record of most blocks, so their misuse is the heap's to catch.
std::unique_ptr<tracked> make_sampled() {
  return std::make_unique<tracked>(strata::tracking_options{.sample_bytes = 512 * 1024});
}
using limited = strata::limiting<heap>;
using counted = strata::statistics<heap, true>;
using logged = strata::logging<heap>;
using locked = strata::synchronized<heap>;
using over_aligned = strata::aligned<heap>;
using retried = strata::failure_callback<heap>;

std::FILE* null_stream() {
  static std::FILE* stream = std::fopen("/dev/null", "w");
  return stream;
}

}  // namespace

std::vector<row> adaptor_rows() {
  return {
      adaptor_row<tracked>("strata::tracking<Upstream>", "tracking.hpp",
                           {[] { return std::make_unique<tracked>(); },
                            [](tracked& a) {
                              EXPECT_EQ(a.live_blocks(), 0u);
                              EXPECT_EQ(a.live_bytes(), 0u);
                              EXPECT_FALSE(a.leak_report().empty());
                            }},
                           {"strata: free of a block not live in this tracking adaptor",
                            "strata: free of a block not live in this tracking adaptor"}),
      adaptor_row<tracked>(
          "strata::tracking<Upstream> (tracking_options{.sample_bytes = N}: sampled)",
          "tracking.hpp",
          {make_sampled,
           [](tracked& a) {
             EXPECT_EQ(a.live_blocks(), 0u);
             EXPECT_EQ(a.live_bytes(), 0u);
             EXPECT_EQ(a.total_allocations(), 1u);
           }},
          {"", ""}),
      adaptor_row<limited>("strata::limiting<Upstream>", "limiting.hpp",
                           {[] { return std::make_unique<limited>(1 << 20); },
                            [](limited& a) {
                              EXPECT_EQ(a.bytes_in_use(), 0u);
                              a.deallocate(a.allocate(1000), 1000);
                            }},
                           {"", ""}),
      adaptor_row<counted>(
          "strata::statistics<Upstream, true> (Atomic; false: one thread at a time)",
          "statistics.hpp",
          {[] { return std::make_unique<counted>(); },
           [](counted& a) {
             EXPECT_EQ(a.snapshot().bytes_in_use, 0u);
             EXPECT_EQ(a.snapshot().blocks_in_use, 0u);
           }},
          {"", ""}),
      adaptor_row<logged>(
          "strata::logging<Upstream>", "logging.hpp",
          {[] { return std::make_unique<logged>(heap{}, null_stream()); }, [](logged&) {}},
          {"", ""}),
      adaptor_row<locked>("strata::synchronized<Upstream>", "synchronized.hpp",
                          {[] { return std::make_unique<locked>(); }, [](locked&) {}}, {"", ""}),
      adaptor_row<over_aligned>(
          "strata::aligned<Upstream>", "aligned.hpp",
          {[] { return std::make_unique<over_aligned>(); }, [](over_aligned&) {}}, {"", ""}),
      adaptor_row<retried>("strata::failure_callback<Upstream>", "failure_callback.hpp",
                           {[] {
                              return std::make_unique<retried>(
                                  [](std::size_t, std::size_t, int) { return false; }, 1);
                            },
                            [](retried& a) { EXPECT_EQ(a.retries(), 0u); }},
                           {"", ""}),
  };
}

}  // namespace strata_misuse
