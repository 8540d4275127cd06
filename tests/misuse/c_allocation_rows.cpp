// Misuse rows of the C API's allocation functions (strata.h): the calling
// thread's default heap, and blocks freed from any thread.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"
#include "strata/strata.h"

namespace strata_misuse {
namespace {

using enum misuse_case;

constexpr const char* corruption = "strata: heap corruption: ";
constexpr const char* double_freed = "strata: heap corruption: double free";
constexpr const char* not_handed_out =
    "strata: heap corruption: free of a pointer strata did not hand out";
constexpr const char* not_strata =
    "strata: heap corruption: free of a pointer strata did not allocate";

constexpr const char* no_pointer = "takes no block";
constexpr const char* no_size = "takes no size";
constexpr const char* no_alignment = "takes no alignment";
constexpr const char* nothing_to_destroy =
    "the default heap lives as long as its thread: nothing to destroy";
constexpr const char* any_thread = "any thread allocates from its own default heap";
constexpr const char* frees_nothing = "frees nothing";
constexpr const char* no_instance = "works on the calling thread's default heap only";

// A block of a first-class heap destroyed since (its pages are gone).
void* block_of_destroyed_heap() {
  strata_heap_t* h = strata_heap_new();
  void* p = strata_heap_malloc(h, 64);
  strata_heap_destroy(h);
  return p;
}

// A block of a first-class heap of the calling thread that stays alive.
void* block_of_another_heap() {
  static strata_heap_t* other = strata_heap_new();
  return strata_heap_malloc(other, 64);
}

// Two threads (neither the block's owner) free one block at the same instant.
void race_free(void (*free_it)(void*)) {
  void* p = strata_malloc(64);
  void* keep = strata_malloc(64);  // the page stays in use whatever happens
  auto free_and_flush = [p, free_it] {
    free_it(p);
    strata_collect(0);  // posts the free now, not at the thread's exit
  };
  at_once(free_and_flush, free_and_flush);
  both_frees_accepted("strata_free");
  strata_free(keep);
}

// The cells every function that frees one block shares.
std::vector<cell> freeing_cells(void (*free_it)(void*)) {
  return {
      returns(null_argument, "no-op", {[free_it] { free_it(nullptr); }}),
      aborts(foreign_pointer, not_strata,
             {[free_it] { free_it(c_library_block()); }, [free_it] { free_it(static_address()); }}),
      aborts(interior_pointer, not_handed_out,
             {[free_it] { free_it(static_cast<char*>(strata_malloc(64)) + 16); },
              [free_it] { free_it(static_cast<char*>(strata_malloc(5000)) + 1024); }}),
      aborts(double_free, double_freed, {[free_it] {
               void* p = strata_malloc(64);
               free_it(p);
               free_it(p);
             }}),
      aborts(use_after_destroy, corruption, {[free_it] { free_it(block_of_destroyed_heap()); }}),
      not_applicable(destroy_twice, nothing_to_destroy),
      returns(wrong_thread, "freed: any thread may free any block", {[free_it] {
                void* p = strata_malloc(64);
                on_another_thread([p, free_it] { free_it(p); });
              }}),
      racing(aborts(racing_free, double_freed, {[free_it] { race_free(free_it); }})),
      returns(other_instance, "freed into the heap it came from",
              {[free_it] { free_it(block_of_another_heap()); }}),
  };
}

row strata_free_row() {
  std::vector<cell> cells = freeing_cells([](void* p) { strata_free(p); });
  cells.push_back(not_applicable(zero_size, no_size));
  cells.push_back(not_applicable(huge_size, no_size));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_free", "strata.h", "C API: allocation", cells};
}

row strata_free_sized_row() {
  std::vector<cell> cells = freeing_cells([](void* p) { strata_free_sized(p, 64); });
  cells.push_back(returns(zero_size, "freed: the size is a hint strata does not need",
                          {[] { strata_free_sized(strata_malloc(64), 0); }}));
  cells.push_back(returns(huge_size, "freed: the size is a hint strata does not need",
                          {[] { strata_free_sized(strata_malloc(64), SIZE_MAX); }}));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_free_sized", "strata.h", "C API: allocation", cells};
}

// A unique block for each of two zero-byte requests.
void expect_two_unique(void* a, void* b) {
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(a, b);
  strata_free(a);
  strata_free(b);
}

// NULL with errno `error` from `call`.
template <class Call>
void expect_null_errno(int error, Call call) {
  errno = 0;
  EXPECT_EQ(call(), nullptr);
  EXPECT_EQ(errno, error);
}

// The cells of a function that only allocates from the default heap.
std::vector<cell> allocating_cells() {
  return {
      not_applicable(foreign_pointer, frees_nothing),
      not_applicable(interior_pointer, frees_nothing),
      not_applicable(double_free, frees_nothing),
      not_applicable(use_after_destroy, nothing_to_destroy),
      not_applicable(destroy_twice, nothing_to_destroy),
      not_applicable(wrong_thread, any_thread),
      not_applicable(racing_free, frees_nothing),
      not_applicable(other_instance, no_instance),
  };
}

row strata_malloc_row() {
  std::vector<cell> cells = allocating_cells();
  cells.push_back(not_applicable(null_argument, "takes no pointer"));
  cells.push_back(returns(zero_size, "a unique block",
                          {[] { expect_two_unique(strata_malloc(0), strata_malloc(0)); }}));
  cells.push_back(sets_errno(huge_size, "NULL, errno ENOMEM", {[] {
                               expect_null_errno(ENOMEM, [] { return strata_malloc(SIZE_MAX); });
                               expect_null_errno(ENOMEM,
                                                 [] { return strata_malloc(SIZE_MAX / 2); });
                             }}));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_malloc", "strata.h", "C API: allocation", cells};
}

row strata_calloc_row() {
  std::vector<cell> cells = allocating_cells();
  cells.push_back(not_applicable(null_argument, "takes no pointer"));
  cells.push_back(returns(zero_size, "a unique block, for a zero count or size",
                          {[] { expect_two_unique(strata_calloc(0, 16), strata_calloc(16, 0)); }}));
  cells.push_back(sets_errno(
      huge_size, "NULL, errno ENOMEM (also when count * size overflows)", {[] {
        expect_null_errno(ENOMEM, [] { return strata_calloc(SIZE_MAX, 2); });
        expect_null_errno(ENOMEM, [] { return strata_calloc(std::size_t{1} << 40, 1 << 20); });
      }}));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_calloc", "strata.h", "C API: allocation", cells};
}

// The cells of the aligned allocation functions, through `allocate(size, alignment)`.
std::vector<cell> aligned_cells(void* (*allocate)(std::size_t, std::size_t)) {
  std::vector<cell> cells = allocating_cells();
  cells.push_back(not_applicable(null_argument, "takes no pointer"));
  cells.push_back(returns(zero_size, "a unique block",
                          {[allocate] { expect_two_unique(allocate(0, 64), allocate(0, 64)); }}));
  cells.push_back(sets_errno(
      huge_size, "NULL, errno ENOMEM (a size or an alignment too large)", {[allocate] {
        expect_null_errno(ENOMEM, [allocate] { return allocate(SIZE_MAX, 64); });
        expect_null_errno(ENOMEM, [allocate] { return allocate(64, std::size_t{1} << 62); });
      }}));
  cells.push_back(sets_errno(bad_alignment, "NULL, errno EINVAL", {[allocate] {
                               expect_null_errno(EINVAL, [allocate] { return allocate(64, 0); });
                               expect_null_errno(EINVAL, [allocate] { return allocate(64, 24); });
                             }}));
  return cells;
}

row strata_malloc_aligned_row() {
  return {"strata_malloc_aligned", "strata.h", "C API: allocation",
          aligned_cells([](std::size_t size, std::size_t alignment) {
            return strata_malloc_aligned(size, alignment);
          })};
}

row strata_aligned_alloc_row() {
  return {"strata_aligned_alloc", "strata.h", "C API: allocation",
          aligned_cells([](std::size_t size, std::size_t alignment) {
            return strata_aligned_alloc(alignment, size);
          })};
}

row strata_posix_memalign_row() {
  std::vector<cell> cells = allocating_cells();
  cells.push_back(returns(null_argument, "returns EINVAL (errno untouched)",
                          {[] { EXPECT_EQ(strata_posix_memalign(nullptr, 64, 64), EINVAL); }}));
  cells.push_back(returns(zero_size, "0 and a unique block", {[] {
                            void* a = nullptr;
                            void* b = nullptr;
                            EXPECT_EQ(strata_posix_memalign(&a, 64, 0), 0);
                            EXPECT_EQ(strata_posix_memalign(&b, 64, 0), 0);
                            expect_two_unique(a, b);
                          }}));
  cells.push_back(returns(huge_size, "returns ENOMEM, *out untouched", {[] {
                            void* p = static_address();
                            EXPECT_EQ(strata_posix_memalign(&p, 64, SIZE_MAX), ENOMEM);
                            EXPECT_EQ(p, static_address());
                          }}));
  cells.push_back(returns(bad_alignment, "returns EINVAL (also below sizeof(void*))", {[] {
                            void* p = nullptr;
                            EXPECT_EQ(strata_posix_memalign(&p, 24, 64), EINVAL);
                            EXPECT_EQ(strata_posix_memalign(&p, 4, 64), EINVAL);
                            EXPECT_EQ(p, nullptr);
                          }}));
  return {"strata_posix_memalign", "strata.h", "C API: allocation", cells};
}

row strata_realloc_row() {
  return {
      "strata_realloc",
      "strata.h",
      "C API: allocation",
      {
          returns(null_argument, "allocates, as strata_malloc", {[] {
                    void* p = strata_realloc(nullptr, 64);
                    EXPECT_NE(p, nullptr);
                    strata_free(p);
                  }}),
          returns(zero_size, "a block of the smallest size; the old one is freed", {[] {
                    void* p = strata_realloc(strata_malloc(64), 0);
                    EXPECT_NE(p, nullptr);
                    strata_free(p);
                  }}),
          sets_errno(huge_size, "NULL, errno ENOMEM; the block stays as it was", {[] {
                       auto* p = static_cast<char*>(strata_malloc(64));
                       p[63] = 7;
                       expect_null_errno(ENOMEM, [p] { return strata_realloc(p, SIZE_MAX); });
                       EXPECT_EQ(p[63], 7);
                       strata_free(p);
                     }}),
          not_applicable(bad_alignment, no_alignment),
          sets_errno(foreign_pointer, "NULL, errno EINVAL: its size cannot be known", {[] {
                       void* p = c_library_block();
                       expect_null_errno(EINVAL, [p] { return strata_realloc(p, 128); });
                       std::free(p);
                     }}),
          aborts(interior_pointer, not_handed_out,
                 {[] { (void)strata_realloc(static_cast<char*>(strata_malloc(64)) + 16, 128); }}),
          aborts(double_free, double_freed, {[] {
                   void* p = strata_malloc(64);
                   strata_free(p);
                   (void)strata_realloc(p, 128);
                 }}),
          aborts(use_after_destroy, corruption,
                 {[] { (void)strata_realloc(block_of_destroyed_heap(), 128); }}),
          not_applicable(destroy_twice, nothing_to_destroy),
          returns(wrong_thread, "moved into the calling thread's heap: any thread may resize", {[] {
                    void* p = strata_malloc(64);
                    on_another_thread([p] { strata_free(strata_realloc(p, 4096)); });
                  }}),
          not_applicable(racing_free, "a resize frees the old block: strata_free's row"),
          returns(other_instance, "moved into the calling thread's default heap",
                  {[] { strata_free(strata_realloc(block_of_another_heap(), 4096)); }}),
      }};
}

row strata_usable_size_row() {
  const char* query = "a query: changes nothing";
  return {
      "strata_usable_size",
      "strata.h",
      "C API: allocation",
      {
          returns(null_argument, "0", {[] { EXPECT_EQ(strata_usable_size(nullptr), 0u); }}),
          not_applicable(zero_size, no_size),
          not_applicable(huge_size, no_size),
          not_applicable(bad_alignment, no_alignment),
          returns(foreign_pointer, "0",
                  {[] { EXPECT_EQ(strata_usable_size(static_address()), 0u); }}),
          returns(interior_pointer, "the bytes from the pointer to its block's end", {[] {
                    auto* p = static_cast<char*>(strata_malloc(64));
                    EXPECT_EQ(strata_usable_size(p + 16), strata_usable_size(p) - 16);
                    strata_free(p);
                  }}),
          returns(double_free, "the size the block had (a freed block is not looked into)", {[] {
                    void* p = strata_malloc(64);
                    std::size_t live = strata_usable_size(p);
                    strata_free(p);
                    EXPECT_EQ(strata_usable_size(p), live);
                  }}),
          not_applicable(use_after_destroy, query),
          not_applicable(destroy_twice, nothing_to_destroy),
          not_applicable(wrong_thread, "any thread may ask about any block"),
          not_applicable(racing_free, frees_nothing),
          not_applicable(other_instance, "any block of any heap"),
      }};
}

row strata_expand_row() {
  return {
      "strata_expand",
      "strata.h",
      "C API: allocation",
      {
          returns(null_argument, "NULL", {[] { EXPECT_EQ(strata_expand(nullptr, 64), nullptr); }}),
          returns(zero_size, "the block, unchanged", {[] {
                    void* p = strata_malloc(64);
                    EXPECT_EQ(strata_expand(p, 0), p);
                    strata_free(p);
                  }}),
          returns(huge_size, "NULL (errno untouched); the block stays", {[] {
                    void* p = strata_malloc(64);
                    EXPECT_EQ(strata_expand(p, SIZE_MAX), nullptr);
                    strata_free(p);
                  }}),
          not_applicable(bad_alignment, no_alignment),
          returns(foreign_pointer, "NULL", {[] {
                    void* p = c_library_block();
                    EXPECT_EQ(strata_expand(p, 128), nullptr);
                    std::free(p);
                  }}),
          aborts(interior_pointer, not_handed_out,
                 {[] { (void)strata_expand(static_cast<char*>(strata_malloc(64)) + 16, 32); }}),
          aborts(double_free, double_freed, {[] {
                   void* p = strata_malloc(64);
                   strata_free(p);
                   (void)strata_expand(p, 32);
                 }}),
          aborts(use_after_destroy, corruption,
                 {[] { (void)strata_expand(block_of_destroyed_heap(), 32); }}),
          not_applicable(destroy_twice, nothing_to_destroy),
          not_applicable(wrong_thread, "any thread may resize any block"),
          not_applicable(racing_free, frees_nothing),
          not_applicable(other_instance, "any block of any heap"),
      }};
}

row strata_malloc_batch_row() {
  std::vector<cell> cells = allocating_cells();
  cells.push_back(sets_errno(null_argument, "0 blocks, errno EINVAL (a count with no array)", {[] {
                               errno = 0;
                               EXPECT_EQ(strata_malloc_batch(16, 10, nullptr), 0u);
                               EXPECT_EQ(errno, EINVAL);
                               EXPECT_EQ(strata_malloc_batch(16, 0, nullptr), 0u);
                             }}));
  cells.push_back(returns(zero_size, "unique blocks; a zero count allocates none", {[] {
                            void* out[2] = {};
                            EXPECT_EQ(strata_malloc_batch(0, 2, out), 2u);
                            expect_two_unique(out[0], out[1]);
                            EXPECT_EQ(strata_malloc_batch(64, 0, out), 0u);
                          }}));
  cells.push_back(sets_errno(huge_size, "0 blocks, errno ENOMEM", {[] {
                               void* out[2] = {};
                               errno = 0;
                               EXPECT_EQ(strata_malloc_batch(SIZE_MAX, 2, out), 0u);
                               EXPECT_EQ(errno, ENOMEM);
                             }}));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_malloc_batch", "strata.h", "C API: allocation", cells};
}

row strata_free_batch_row() {
  auto free_one = [](void* p) { strata_free_batch(&p, 1); };
  std::vector<cell> cells = freeing_cells(free_one);
  cells.erase(cells.begin());  // its null case is the array's
  cells.push_back(aborts(null_argument, "strata: strata_free_batch: null array of blocks",
                         {[] { strata_free_batch(nullptr, 3); }}));
  cells.push_back(
      returns(zero_size, "no-op: a zero count frees none, null blocks are skipped", {[] {
                strata_free_batch(nullptr, 0);
                void* blocks[2] = {nullptr, strata_malloc(64)};
                strata_free_batch(blocks, 2);
              }}));
  cells.push_back(not_applicable(huge_size, "a count past the array is the caller's overrun"));
  cells.push_back(not_applicable(bad_alignment, no_alignment));
  return {"strata_free_batch", "strata.h", "C API: allocation", cells};
}

}  // namespace

std::vector<row> c_allocation_rows() {
  return {strata_malloc_row(),        strata_calloc_row(),         strata_realloc_row(),
          strata_free_row(),          strata_free_sized_row(),     strata_malloc_aligned_row(),
          strata_aligned_alloc_row(), strata_posix_memalign_row(), strata_usable_size_row(),
          strata_expand_row(),        strata_malloc_batch_row(),   strata_free_batch_row()};
}

}  // namespace strata_misuse
