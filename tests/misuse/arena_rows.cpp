// Misuse rows of monotonic_arena (arena.hpp): its frees are no-ops, so its
// misuses are marks (foreign, stale, of a destroyed arena) and a destroyed arena.
#include <gtest/gtest.h>

#include <strata/arena.hpp>

#include <cstdint>
#include <new>
#include <stdexcept>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

using unchecked_arena =
    strata::monotonic_arena<strata::malloc_resource, strata::arena_config{.checked = false}>;
using checked_arena =
    strata::monotonic_arena<strata::malloc_resource, strata::arena_config{.checked = true}>;

constexpr const char* foreign_mark = "strata: foreign arena mark";
constexpr const char* stale_mark = "strata: stale arena mark";
constexpr const char* destroyed_arena = "strata: use of a destroyed monotonic_arena";

// Storage an arena is made in and destroyed in by hand, so that what is done
// with it after its destructor reaches the arena's own check.
template <class Arena>
struct arena_storage {
  alignas(Arena) unsigned char bytes[sizeof(Arena)];
  Arena* make() { return new (bytes) Arena(); }
};

template <class Arena>
void allocate_after_destroy() {
  arena_storage<Arena> storage;
  Arena* arena = storage.make();
  (void)arena->allocate(64);
  arena->~Arena();
  (void)opaque(arena)->allocate(64);
}

template <class Arena>
void destroy_twice_by_hand() {
  arena_storage<Arena> storage;
  Arena* arena = storage.make();
  (void)arena->allocate(64);
  arena->~Arena();
  opaque(arena)->~Arena();
}

// A mark of an arena destroyed since, used on a new arena at its address.
template <class Arena>
void mark_of_destroyed_arena_on_its_successor() {
  arena_storage<Arena> storage;
  Arena* first = storage.make();
  (void)first->allocate(64);
  strata::arena_mark mark = first->mark();
  (void)first->allocate(64);
  first->~Arena();
  Arena* second = opaque(storage.make());
  (void)second->allocate(64);
  second->rewind(mark);
}

template <class Arena>
void mark_taken_before(void (*end_cycle)(Arena&)) {
  Arena arena;
  (void)arena.allocate(64);
  strata::arena_mark mark = arena.mark();
  (void)arena.allocate(64);
  end_cycle(arena);
  (void)arena.allocate(64);
  arena.rewind(mark);
}

template <class Arena>
std::vector<cell> arena_cells() {
  const char* no_op = "no-op: an arena frees at reset(), rewind() or destruction";
  return {
      aborts(null_argument, foreign_mark, {[] {
               Arena arena;
               arena.rewind(strata::arena_mark{});
             }}),
      returns(zero_size, "a distinct block", {[] {
                Arena arena;
                EXPECT_NE(arena.allocate(0), arena.allocate(0));
              }}),
      throws<std::bad_alloc>(huge_size, "std::bad_alloc", "bad_alloc",
                             {[] {
                                Arena arena;
                                (void)arena.allocate(SIZE_MAX);
                              },
                              [] {
                                Arena arena;
                                (void)arena.allocate(64, std::size_t{1} << 62);
                              }}),
      throws<std::invalid_argument>(bad_alignment, "std::invalid_argument", "is not a power of two",
                                    {[] {
                                      Arena arena;
                                      (void)arena.allocate(64, 24);
                                    }}),
      returns(foreign_pointer, no_op, {[] {
                Arena arena;
                void* p = c_library_block();
                arena.deallocate(p, 64);
                std::free(p);
              }}),
      returns(interior_pointer, no_op, {[] {
                Arena arena;
                arena.deallocate(static_cast<char*>(arena.allocate(64)) + 8, 8);
              }}),
      returns(double_free, no_op, {[] {
                Arena arena;
                void* p = arena.allocate(64);
                arena.deallocate(p, 64);
                arena.deallocate(p, 64);
              }}),
      aborts(destroy_twice, "strata: monotonic_arena destroyed twice",
             {destroy_twice_by_hand<Arena>}),
      not_applicable(wrong_thread,
                     "an arena belongs to no thread; it serves one thread at a time "
                     "(synchronized shares it)"),
      not_applicable(racing_free, "frees are no-ops"),
      aborts(other_instance, foreign_mark,
             {[] {
                Arena one;
                Arena other;
                strata::arena_mark mark = other.mark();
                one.rewind(mark);
              },
              mark_of_destroyed_arena_on_its_successor<Arena>}),
  };
}

row unchecked_arena_row() {
  std::vector<cell> cells = arena_cells<unchecked_arena>();
  cells.push_back(aborts_each(
      use_after_destroy,
      "one line and abort: a destroyed arena, or a mark taken before reset() or release() "
      "(a mark rewound past is caught by the checked configuration only: unchecked, rewinding "
      "to it frees what lies after it)",
      {{destroyed_arena, allocate_after_destroy<unchecked_arena>},
       {stale_mark, [] { mark_taken_before<unchecked_arena>([](auto& a) { a.reset(); }); }},
       {stale_mark, [] { mark_taken_before<unchecked_arena>([](auto& a) { a.release(); }); }}}));
  return {"strata::monotonic_arena<> (arena_config::checked = false, the release default)",
          "arena.hpp", "Arenas, frames and sessions", cells};
}

row checked_arena_row() {
  std::vector<cell> cells = arena_cells<checked_arena>();
  cells.push_back(aborts_each(
      use_after_destroy,
      "one line and abort: a destroyed arena, a mark taken before reset() or release(), or a "
      "mark rewound past",
      {{destroyed_arena, allocate_after_destroy<checked_arena>},
       {stale_mark, [] { mark_taken_before<checked_arena>([](auto& a) { a.reset(); }); }},
       {stale_mark, [] { mark_taken_before<checked_arena>([](auto& a) { a.release(); }); }},
       {stale_mark, [] {
          checked_arena arena;
          strata::arena_mark outer = arena.mark();
          strata::arena_mark inner = arena.mark();
          arena.rewind(outer);
          arena.rewind(inner);
        }}}));
  return {"strata::monotonic_arena<> (arena_config::checked = true, the debug default)",
          "arena.hpp", "Arenas, frames and sessions", cells};
}

}  // namespace

std::vector<row> arena_rows() {
  return {unchecked_arena_row(), checked_arena_row()};
}

}  // namespace strata_misuse
