// Misuse rows of bfc and buddy (bfc.hpp, buddy.hpp): their metadata lives
// beside the memory, so every free is checked against it before anything changes.
#include <gtest/gtest.h>

#include <strata/bfc.hpp>
#include <strata/buddy.hpp>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

constexpr const char* section = "Pools, bfc and buddy";
constexpr const char* use_unchecked =
    "not checked: allocate and deallocate go straight to the allocator's node storage (freed "
    "by its destructor) with no slow path in between that could read a lifetime word, so "
    "checking would cost a load and a compare on every call (its destructor does check: see "
    "destroy twice)";
constexpr const char* one_thread = "one thread at a time, not checked (synchronized<> shares it)";

// The cells bfc and buddy share, `Make` giving a fresh instance and `who`
// naming it in the lines.
template <class Alloc, class Make>
std::vector<cell> best_fit_cells(Make make, const std::string& who) {
  std::string where = " in strata::" + who + "::deallocate";
  std::string foreign = "strata: " + who + " free of a pointer it did not hand out" + where;
  return {
      returns(null_argument, "deallocate(nullptr, n) is a no-op", {[make] {
                Alloc a = make();
                a.deallocate(nullptr, 64);
              }}),
      returns(zero_size, "a block", {[make] {
                Alloc a = make();
                void* p = a.allocate(0);
                EXPECT_NE(p, nullptr);
                a.deallocate(p, 0);
              }}),
      throws<std::bad_alloc>(huge_size, "strata::capacity_error (a std::bad_alloc)",
                             "cannot hold a request of", {[make] {
                               Alloc a = make();
                               (void)a.allocate(SIZE_MAX / 2);
                             }}),
      throws<std::invalid_argument>(bad_alignment, "std::invalid_argument", "is not a power of two",
                                    {[make] {
                                      Alloc a = make();
                                      (void)a.allocate(64, 24);
                                    }}),
      aborts(foreign_pointer, foreign, {[make] {
               Alloc a = make();
               (void)a.allocate(64);
               a.deallocate(c_library_block(), 64);
             }}),
      aborts(interior_pointer,
             "strata: " + who + " free of a pointer that is not a live block (interior)" + where,
             {[make] {
               Alloc a = make();
               void* p = a.allocate(256);
               a.deallocate(static_cast<char*>(p) + 64, 64);
             }}),
      aborts(double_free, "strata: double free of a " + who + " block" + where, {[make] {
               Alloc a = make();
               void* p = a.allocate(256);
               (void)a.allocate(256);
               a.deallocate(p, 256);
               a.deallocate(p, 256);
             }}),
      unchecked(use_after_destroy, use_unchecked),
      aborts(destroy_twice, "strata: " + who + " destroyed twice", {[make] {
               alignas(Alloc) unsigned char room[sizeof(Alloc)];
               Alloc* a = new (room) Alloc(make());
               (void)a->allocate(64);
               a->~Alloc();
               opaque(a)->~Alloc();
             }}),
      unchecked(wrong_thread, one_thread),
      unchecked(racing_free, one_thread),
      aborts(other_instance, foreign, {[make] {
               Alloc one = make();
               Alloc other = make();
               (void)one.allocate(64);
               one.deallocate(other.allocate(64), 64);
             }}),
  };
}

}  // namespace

std::vector<row> bfc_buddy_rows() {
  return {
      {"strata::bfc<>", "bfc.hpp", section,
       best_fit_cells<strata::bfc<>>(
           [] { return strata::bfc<>({.initial_region_bytes = 1 << 20}); }, "bfc")},
      {"strata::buddy<>", "buddy.hpp", section,
       best_fit_cells<strata::buddy<>>(
           [] { return strata::buddy<>({.total_bytes = 1 << 20, .min_block = 64}); }, "buddy")},
  };
}

}  // namespace strata_misuse
