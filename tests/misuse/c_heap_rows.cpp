// Misuse rows of the C API's first-class heaps (strata.h): handles that are
// null, foreign, destroyed (or deleted, or of a thread that exited), remade at
// the same address, or used from a thread that does not own them.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"
#include "strata/strata.h"

namespace strata_misuse {
namespace {

using enum misuse_case;

// The line that starts each refusal of `call`.
std::string refused(const char* call, const char* what) {
  return std::string("strata: ") + call + ": " + what;
}
std::string not_a_heap(const char* call) {
  return refused(call, "not a strata heap");
}
std::string destroyed(const char* call) {
  return refused(call, "heap destroyed");
}
std::string not_owner(const char* call) {
  return std::string("strata: ") + call + " called from a thread that does not own heap";
}

// Handles that are no heap: the C library's block, a static object, and a
// heap's handle moved by a few bytes.
strata_heap_t* c_library_handle() {
  return static_cast<strata_heap_t*>(c_library_block());
}
strata_heap_t* static_handle() {
  return static_cast<strata_heap_t*>(static_address());
}
strata_heap_t* inside_a_handle() {
  return reinterpret_cast<strata_heap_t*>(reinterpret_cast<char*>(strata_heap_new()) + 8);
}

// Handles whose heap is gone, each in its own way.
strata_heap_t* destroyed_heap() {
  strata_heap_t* h = strata_heap_new();
  strata_heap_destroy(h);
  return h;
}
strata_heap_t* deleted_heap() {
  strata_heap_t* h = strata_heap_new();
  strata_heap_delete(h);
  return h;
}
strata_heap_t* heap_of_exited_thread() {
  strata_heap_t* h = nullptr;
  on_another_thread([&h] { h = strata_heap_new(); });
  return h;
}
// Destroyed, with a new heap made since (at the same address, as a rule).
strata_heap_t* destroyed_and_remade() {
  strata_heap_t* h = destroyed_heap();
  (void)strata_heap_new();
  return h;
}

// A live heap of a thread that stays alive (so the heap does) while `use` runs.
void use_from_another_thread(void (*use)(strata_heap_t*)) {
  strata_heap_t* h = strata_heap_new();
  on_another_thread([h, use] { use(h); });
}

// The cells every call taking a heap handle shares, `use` being the call.
std::vector<cell> handle_cells(const char* call, void (*use)(strata_heap_t*)) {
  return {
      aborts(foreign_pointer, not_a_heap(call),
             {[use] { use(c_library_handle()); }, [use] { use(static_handle()); }}),
      aborts(interior_pointer, not_a_heap(call), {[use] { use(inside_a_handle()); }}),
      aborts(use_after_destroy, destroyed(call),
             {[use] { use(destroyed_heap()); }, [use] { use(deleted_heap()); },
              [use] { use(heap_of_exited_thread()); }, [use] { use(destroyed_and_remade()); }}),
      aborts(wrong_thread, not_owner(call), {[use] { use_from_another_thread(use); }}),
  };
}

// NULL with errno `error` from `call`.
template <class Call>
void expect_null_errno(int error, Call call) {
  errno = 0;
  EXPECT_EQ(call(), nullptr);
  EXPECT_EQ(errno, error);
}

void expect_two_unique(void* a, void* b) {
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(a, b);
  strata_free(a);
  strata_free(b);
}

// The cells of a call that allocates from a heap, `allocate(heap, size)` being it.
std::vector<cell> heap_allocating_cells(const char* call,
                                        void* (*allocate)(strata_heap_t*, std::size_t)) {
  return {
      aborts(foreign_pointer, not_a_heap(call),
             {[allocate] { (void)allocate(c_library_handle(), 64); },
              [allocate] { (void)allocate(static_handle(), 64); }}),
      aborts(interior_pointer, not_a_heap(call),
             {[allocate] { (void)allocate(inside_a_handle(), 64); }}),
      aborts(use_after_destroy, destroyed(call),
             {[allocate] { (void)allocate(destroyed_heap(), 64); },
              [allocate] { (void)allocate(deleted_heap(), 64); },
              [allocate] { (void)allocate(heap_of_exited_thread(), 64); },
              [allocate] { (void)allocate(destroyed_and_remade(), 64); }}),
      aborts(wrong_thread, not_owner(call), {[allocate] {
               strata_heap_t* h = strata_heap_new();
               on_another_thread([h, allocate] { (void)allocate(h, 64); });
             }}),
      sets_errno(null_argument, "NULL, errno EINVAL", {[allocate] {
                   expect_null_errno(EINVAL, [allocate] { return allocate(nullptr, 64); });
                 }}),
      returns(zero_size, "a unique block", {[allocate] {
                strata_heap_t* h = strata_heap_new();
                expect_two_unique(allocate(h, 0), allocate(h, 0));
                strata_heap_destroy(h);
              }}),
      sets_errno(huge_size, "NULL, errno ENOMEM", {[allocate] {
                   strata_heap_t* h = strata_heap_new();
                   expect_null_errno(ENOMEM, [h, allocate] { return allocate(h, SIZE_MAX); });
                   strata_heap_destroy(h);
                 }}),
      not_applicable(double_free, "frees nothing"),
      not_applicable(destroy_twice, "destroys nothing"),
      not_applicable(racing_free, "frees nothing"),
      returns(other_instance, "any heap of the calling thread serves, its default heap too",
              {[allocate] { strata_free(allocate(strata_heap_default(), 64)); }}),
  };
}

row strata_heap_new_row() {
  const char* nothing = "takes no argument";
  return {"strata_heap_new",
          "strata.h",
          "C API: first-class heaps",
          {
              not_applicable(null_argument, nothing),
              not_applicable(zero_size, nothing),
              sets_errno(huge_size, "NULL, errno ENOMEM when no memory is left for a heap", {}),
              not_applicable(bad_alignment, nothing),
              not_applicable(foreign_pointer, nothing),
              not_applicable(interior_pointer, nothing),
              not_applicable(double_free, nothing),
              not_applicable(use_after_destroy, nothing),
              not_applicable(destroy_twice, nothing),
              not_applicable(wrong_thread, "the new heap belongs to the calling thread"),
              not_applicable(racing_free, nothing),
              not_applicable(other_instance, nothing),
          }};
}

row strata_heap_malloc_row() {
  return {"strata_heap_malloc", "strata.h", "C API: first-class heaps", [] {
            auto cells = heap_allocating_cells(
                "strata_heap_malloc",
                [](strata_heap_t* h, std::size_t size) { return strata_heap_malloc(h, size); });
            cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
            return cells;
          }()};
}

row strata_heap_calloc_row() {
  return {"strata_heap_calloc", "strata.h", "C API: first-class heaps", [] {
            auto cells = heap_allocating_cells(
                "strata_heap_calloc",
                [](strata_heap_t* h, std::size_t size) { return strata_heap_calloc(h, size, 1); });
            cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
            return cells;
          }()};
}

row strata_heap_realloc_row() {
  return {"strata_heap_realloc", "strata.h", "C API: first-class heaps", [] {
            auto cells = heap_allocating_cells("strata_heap_realloc",
                                               [](strata_heap_t* h, std::size_t size) {
                                                 return strata_heap_realloc(h, nullptr, size);
                                               });
            cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
            return cells;
          }()};
}

row strata_heap_malloc_aligned_row() {
  return {"strata_heap_malloc_aligned", "strata.h", "C API: first-class heaps", [] {
            auto cells = heap_allocating_cells("strata_heap_malloc_aligned",
                                               [](strata_heap_t* h, std::size_t size) {
                                                 return strata_heap_malloc_aligned(h, size, 64);
                                               });
            cells.push_back(sets_errno(bad_alignment, "NULL, errno EINVAL", {[] {
                                         strata_heap_t* h = strata_heap_new();
                                         expect_null_errno(EINVAL, [h] {
                                           return strata_heap_malloc_aligned(h, 64, 24);
                                         });
                                         strata_heap_destroy(h);
                                       }}));
            return cells;
          }()};
}

// The row of a call that ends a heap: strata_heap_destroy or strata_heap_delete.
row ending_row(const char* call, void (*end)(strata_heap_t*)) {
  std::vector<cell> cells = handle_cells(call, end);
  cells.push_back(aborts(null_argument, refused(call, "null heap"), {[end] { end(nullptr); }}));
  cells.push_back(not_applicable(zero_size, "takes no size"));
  cells.push_back(not_applicable(huge_size, "takes no size"));
  cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
  cells.push_back(not_applicable(double_free, "frees no block: see destroy twice"));
  cells.push_back(aborts(destroy_twice, destroyed(call), {[end] {
                           strata_heap_t* h = strata_heap_new();
                           end(h);
                           end(h);
                         }}));
  cells.push_back(not_applicable(
      racing_free, "only the owning thread may end a heap: another is refused (wrong thread)"));
  cells.push_back(aborts(other_instance, refused(call, "a thread's default heap"),
                         {[end] { end(strata_heap_default()); }}));
  return {call, "strata.h", "C API: first-class heaps", cells};
}

row strata_heap_visit_row() {
  static auto visit_all = [](void*, std::size_t, void*) { return 1; };
  std::vector<cell> cells = handle_cells(
      "strata_heap_visit", [](strata_heap_t* h) { strata_heap_visit(h, visit_all, nullptr); });
  cells.push_back(aborts(null_argument, "strata: strata_heap_visit: null",
                         {[] { strata_heap_visit(nullptr, visit_all, nullptr); },
                          [] { strata_heap_visit(strata_heap_default(), nullptr, nullptr); }}));
  cells.push_back(not_applicable(zero_size, "takes no size"));
  cells.push_back(not_applicable(huge_size, "takes no size"));
  cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
  cells.push_back(not_applicable(double_free, "frees nothing"));
  cells.push_back(not_applicable(destroy_twice, "destroys nothing"));
  cells.push_back(not_applicable(racing_free, "frees nothing"));
  cells.push_back(returns(other_instance,
                          "visits any heap of the calling thread, its default heap too",
                          {[] { strata_heap_visit(strata_heap_default(), visit_all, nullptr); }}));
  return {"strata_heap_visit", "strata.h", "C API: first-class heaps", cells};
}

row strata_heap_check_row() {
  std::vector<cell> cells =
      handle_cells("strata_heap_check", [](strata_heap_t* h) { (void)strata_heap_check(h); });
  cells.push_back(returns(null_argument, "1, having checked the calling thread's default heap",
                          {[] { EXPECT_EQ(strata_heap_check(nullptr), 1); }}));
  cells.push_back(not_applicable(zero_size, "takes no size"));
  cells.push_back(not_applicable(huge_size, "takes no size"));
  cells.push_back(not_applicable(bad_alignment, "takes no alignment"));
  cells.push_back(not_applicable(double_free, "frees nothing (a block freed twice it reports)"));
  cells.push_back(not_applicable(destroy_twice, "destroys nothing"));
  cells.push_back(not_applicable(racing_free, "frees nothing"));
  cells.push_back(returns(other_instance, "1: checks any heap of the calling thread",
                          {[] { EXPECT_EQ(strata_heap_check(strata_heap_default()), 1); }}));
  return {"strata_heap_check", "strata.h", "C API: first-class heaps", cells};
}

// A row whose every case is not applicable, for `reason`.
row not_applicable_row(const char* call, const char* reason) {
  std::vector<cell> cells;
  for (int c = 0; c < case_count; ++c) cells.push_back(not_applicable(misuse_case(c), reason));
  return {call, "strata.h", "C API: first-class heaps", cells};
}

}  // namespace

std::vector<row> c_heap_rows() {
  return {
      strata_heap_new_row(),
      strata_heap_malloc_row(),
      strata_heap_calloc_row(),
      strata_heap_realloc_row(),
      strata_heap_malloc_aligned_row(),
      ending_row("strata_heap_destroy", [](strata_heap_t* h) { strata_heap_destroy(h); }),
      ending_row("strata_heap_delete", [](strata_heap_t* h) { strata_heap_delete(h); }),
      not_applicable_row("strata_heap_default",
                         "takes nothing; returns the calling thread's default heap"),
      strata_heap_visit_row(),
      not_applicable_row("strata_collect", "takes a flag; frees and allocates nothing"),
      strata_heap_check_row(),
  };
}

}  // namespace strata_misuse
