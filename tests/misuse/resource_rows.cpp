// Misuse rows of the resources and the typed allocator (resource.hpp,
// allocator.hpp, address_table.hpp): the strata heap as a resource answers as
// the C API does; the C library's resources answer as the C library does.
#include <gtest/gtest.h>

#include <strata/address_table.hpp>
#include <strata/allocator.hpp>
#include <strata/resource.hpp>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

constexpr const char* section = "Resources";
constexpr const char* double_freed = "strata: heap corruption: double free";
constexpr const char* not_strata =
    "strata: heap corruption: free of a pointer strata did not allocate";
constexpr const char* not_handed_out =
    "strata: heap corruption: free of a pointer strata did not hand out";
constexpr const char* stateless = "holds nothing to destroy";

// The cells of a resource over the strata heap.
template <class Resource>
std::vector<cell> heap_cells() {
  return {
      returns(null_argument, "deallocate(nullptr, n) is a no-op", {[] {
                Resource r;
                r.deallocate(nullptr, 64);
              }}),
      returns(zero_size, "a block", {[] {
                Resource r;
                void* p = r.allocate(0);
                EXPECT_NE(p, nullptr);
                r.deallocate(p, 0);
              }}),
      throws<std::bad_alloc>(huge_size, "std::bad_alloc", "bad_alloc", {[] {
                               Resource r;
                               (void)r.allocate(SIZE_MAX / 2);
                             }}),
      throws<std::invalid_argument>(bad_alignment, "std::invalid_argument", "is not a power of two",
                                    {[] {
                                      Resource r;
                                      (void)r.allocate(64, 24);
                                    }}),
      aborts(foreign_pointer, not_strata, {[] {
               Resource r;
               r.deallocate(c_library_block(), 64);
             }}),
      aborts(interior_pointer, not_handed_out, {[] {
               Resource r;
               r.deallocate(static_cast<char*>(r.allocate(64)) + 16, 48);
             }}),
      aborts(double_free, double_freed, {[] {
               Resource r;
               void* p = r.allocate(64);
               r.deallocate(p, 64);
               r.deallocate(p, 64);
             }}),
      not_applicable(use_after_destroy, stateless),
      not_applicable(destroy_twice, stateless),
      returns(wrong_thread, "freed: any thread frees any block", {[] {
                Resource r;
                void* p = r.allocate(64);
                on_another_thread([p] {
                  Resource other;
                  other.deallocate(p, 64);
                });
              }}),
      racing(aborts(racing_free, double_freed, {[] {
                      Resource r;
                      void* p = r.allocate(64);
                      void* keep = r.allocate(64);
                      auto free_it = [p] {
                        Resource mine;
                        mine.deallocate(p, 64);
                        strata_collect(0);
                      };
                      at_once(free_it, free_it);
                      both_frees_accepted("heap_resource::deallocate");
                      r.deallocate(keep, 64);
                    }})),
      returns(other_instance, "freed: every heap_resource frees into the heap a block came from",
              {[] {
                Resource one;
                Resource other;
                one.deallocate(other.allocate(64), 64);
              }}),
  };
}

// A row whose resource forwards to the C library, answering as it does.
row c_library_row(const char* api) {
  const char* libc = "the C library's answer (glibc: its own line and abort), not strata's";
  return {api,
          "resource.hpp",
          section,
          {
              returns(null_argument, "deallocate(nullptr, n) is a no-op", {}),
              returns(zero_size, "a block", {}),
              throws<std::bad_alloc>(huge_size, "std::bad_alloc", "bad_alloc", {}),
              throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                            "is not a power of two", {}),
              unchecked(foreign_pointer, libc),
              unchecked(interior_pointer, libc),
              unchecked(double_free, libc),
              not_applicable(use_after_destroy, stateless),
              not_applicable(destroy_twice, stateless),
              returns(wrong_thread, "freed: any thread frees any block", {}),
              unchecked(racing_free, libc),
              returns(other_instance, "freed: every instance is the same resource", {}),
          }};
}

// The typed allocator over the heap: a count, not bytes; frees are the heap's.
row typed_allocator_row() {
  using alloc = strata::allocator<long>;
  const char* resource_answers = "the resource's answer (see its row)";
  return {"strata::allocator<T, Resource> (over heap_resource)",
          "allocator.hpp",
          section,
          {
              returns(null_argument, "deallocate(nullptr, n) is a no-op", {[] {
                        strata::heap_resource heap;
                        alloc(heap).deallocate(nullptr, 8);
                      }}),
              returns(zero_size, "a block", {[] {
                        strata::heap_resource heap;
                        alloc a(heap);
                        long* p = a.allocate(0);
                        EXPECT_NE(p, nullptr);
                        a.deallocate(p, 0);
                      }}),
              throws<std::bad_array_new_length>(
                  huge_size, "std::bad_array_new_length when n * sizeof(T) overflows", "", {[] {
                    strata::heap_resource heap;
                    (void)alloc(heap).allocate(SIZE_MAX / 4);
                  }}),
              not_applicable(bad_alignment, "alignof(T)"),
              aborts(foreign_pointer, not_strata, {[] {
                       strata::heap_resource heap;
                       alloc(heap).deallocate(static_cast<long*>(c_library_block()), 8);
                     }}),
              aborts(interior_pointer, not_handed_out, {[] {
                       strata::heap_resource heap;
                       alloc a(heap);
                       a.deallocate(a.allocate(8) + 2, 6);
                     }}),
              aborts(double_free, double_freed, {[] {
                       strata::heap_resource heap;
                       alloc a(heap);
                       long* p = a.allocate(8);
                       a.deallocate(p, 8);
                       a.deallocate(p, 8);
                     }}),
              not_applicable(use_after_destroy, "refers to its resource, which must outlive it"),
              not_applicable(destroy_twice, "holds a pointer to its resource only"),
              returns(wrong_thread, resource_answers, {}),
              returns(racing_free, resource_answers, {}),
              returns(other_instance, "freed through the resource both refer to", {[] {
                        strata::heap_resource heap;
                        alloc one(heap);
                        alloc other(heap);
                        one.deallocate(other.allocate(8), 8);
                      }}),
          }};
}

row address_table_row() {
  const char* none = "takes keys, not blocks: the tracking adaptor's row has its frees";
  std::vector<cell> cells;
  cells.push_back(throws<std::invalid_argument>(
      null_argument, "insert(0): std::invalid_argument; erase(0): false", "key 0", {[] {
        strata::address_table<int> table;
        EXPECT_FALSE(table.erase(0, nullptr));
        table.insert(0, 1);
      }}));
  for (int c = 1; c < case_count; ++c) cells.push_back(not_applicable(misuse_case(c), none));
  return {"strata::address_table<Value>", "address_table.hpp", section, cells};
}

}  // namespace

std::vector<row> resource_rows() {
  return {
      {"strata::heap_resource (the default heap)", "resource.hpp", section,
       heap_cells<strata::heap_resource>()},
      c_library_row("strata::malloc_resource"),
      c_library_row("strata::new_delete_resource"),
      typed_allocator_row(),
      address_table_row(),
  };
}

}  // namespace strata_misuse
