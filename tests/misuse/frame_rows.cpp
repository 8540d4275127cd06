// Misuse rows of the frame allocator (frame.hpp): its frame memory (bumps freed
// at end_frame(), attributed to registered tags) and its pooled small blocks,
// freed from any thread.
#include <gtest/gtest.h>

#include <strata/frame.hpp>

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

using frames = strata::frame_allocator<>;

constexpr const char* section = "Arenas, frames and sessions";
constexpr const char* where = " in frame_allocator::pool_deallocate";

std::string pool_line(const char* what) {
  return std::string("strata: ") + what + where;
}

constexpr const char* destroyed_unchecked =
    "not checked: a frame allocator is an object its owner destroys once; its destruction "
    "frees every thread's arenas and pools";

row frame_memory_row() {
  return {
      "strata::frame_allocator<>::allocate, allocate_array, allocate_batch",
      "frame.hpp",
      section,
      {
          not_applicable(null_argument, "takes no pointer (allocate_batch: a non-null array)"),
          returns(zero_size, "a distinct block", {[] {
                    frames f;
                    f.begin_frame();
                    EXPECT_NE(f.allocate(0), f.allocate(0));
                    f.end_frame();
                  }}),
          throws<std::bad_alloc>(huge_size, "std::bad_alloc (std::bad_array_new_length for arrays)",
                                 "bad",
                                 {[] {
                                    frames f;
                                    (void)f.allocate(SIZE_MAX);
                                  },
                                  [] {
                                    frames f;
                                    (void)f.allocate_array<double>(SIZE_MAX / 4);
                                  }}),
          throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                        "is not a power of two", {[] {
                                          frames f;
                                          (void)f.allocate(64, 24);
                                        }}),
          returns(foreign_pointer, "deallocate is a no-op: frame memory goes at end_frame()", {[] {
                    frames f;
                    void* p = c_library_block();
                    f.deallocate(p, 64);
                    std::free(p);
                  }}),
          returns(interior_pointer, "deallocate is a no-op", {[] {
                    frames f;
                    f.deallocate(static_cast<char*>(f.allocate(64)) + 8, 8);
                  }}),
          returns(double_free, "deallocate is a no-op", {[] {
                    frames f;
                    void* p = f.allocate(64);
                    f.deallocate(p, 64);
                    f.deallocate(p, 64);
                  }}),
          unchecked(use_after_destroy, destroyed_unchecked),
          unchecked(destroy_twice, destroyed_unchecked),
          returns(wrong_thread, "each thread allocates from an arena of its own", {[] {
                    frames f;
                    void* mine = f.allocate(64);
                    on_another_thread([&f, mine] { EXPECT_NE(f.allocate(64), mine); });
                  }}),
          not_applicable(racing_free, "frees are no-ops"),
          throws<std::invalid_argument>(
              other_instance,
              "std::invalid_argument: a tag this allocator never registered (another's, or "
              "one past its last)",
              "was never registered",
              {[] {
                 frames f;
                 (void)f.allocate(64, 16, strata::frame_tag{5});
               },
               [] {
                 frames one;
                 frames other;
                 strata::frame_tag tag = other.register_tag("other's");
                 (void)one.allocate(64, 16, tag);
               },
               [] {
                 frames f;
                 void* out[2];
                 f.allocate_batch(16, 2, out, 16, strata::frame_tag{63});
               }}),
      }};
}

// A pooled block the owner (this thread) allocated, and the next block of its
// page, which no call has handed out yet.
struct pooled {
  void* block;
  void* never_handed_out;
};
pooled pooled_block(frames& f) {
  void* p = f.pool_allocate(64);
  return {p, static_cast<char*>(p) + 64};
}

row frame_pool_row() {
  return {
      "strata::frame_allocator<>::pool_allocate, pool_deallocate",
      "frame.hpp",
      section,
      {
          returns(null_argument, "pool_deallocate(nullptr) is a no-op", {[] {
                    frames f;
                    f.pool_deallocate(nullptr);
                  }}),
          returns(zero_size, "a block of the smallest class", {[] {
                    frames f;
                    void* p = f.pool_allocate(0);
                    EXPECT_NE(p, nullptr);
                    f.pool_deallocate(p);
                  }}),
          throws<std::bad_alloc>(huge_size, "std::bad_alloc past 256 bytes", "bad_alloc", {[] {
                                   frames f;
                                   (void)f.pool_allocate(257);
                                 }}),
          not_applicable(bad_alignment, "takes no alignment: blocks are aligned to their size"),
          aborts(foreign_pointer, pool_line("block freed into the wrong frame allocator"),
                 {[] {
                    frames f;
                    (void)f.pool_allocate(64);
                    f.pool_deallocate(c_library_block());
                  },
                  [] {
                    frames f;
                    f.pool_deallocate(static_address());
                  }}),
          aborts_each(interior_pointer,
                      "one line and abort: a pointer inside a block, or a block never handed "
                      "out, freed by its owner or by another thread",
                      {{pool_line("pointer inside a pool block, not at its start, freed"),
                        [] {
                          frames f;
                          f.pool_deallocate(static_cast<char*>(f.pool_allocate(64)) + 8);
                        }},
                       {pool_line("pool block that was never allocated freed"),
                        [] {
                          frames f;
                          f.pool_deallocate(pooled_block(f).never_handed_out);
                        }},
                       {pool_line("pool block that was never allocated freed"),
                        [] {
                          frames f;
                          pooled b = pooled_block(f);
                          on_another_thread([&f, b] { f.pool_deallocate(b.never_handed_out); });
                          void* carved = f.pool_allocate(64);  // the owner carves it now
                          f.begin_frame();
                          EXPECT_NE(f.pool_allocate(64), carved) << "handed out twice";
                        }}}),
          aborts(double_free, pool_line("double free of a pool block"),
                 {[] {
                    frames f;
                    void* p = f.pool_allocate(64);
                    f.pool_deallocate(p);
                    f.pool_deallocate(p);
                  },
                  [] {
                    frames f;
                    void* p = f.pool_allocate(64);
                    on_another_thread([&f, p] { f.pool_deallocate(p); });
                    f.pool_deallocate(p);
                  }}),
          unchecked(use_after_destroy, destroyed_unchecked),
          unchecked(destroy_twice, destroyed_unchecked),
          returns(wrong_thread, "freed: the block waits for its owner's next begin_frame()", {[] {
                    frames f;
                    void* p = f.pool_allocate(64);
                    on_another_thread([&f, p] { f.pool_deallocate(p); });
                    f.begin_frame();
                    EXPECT_EQ(f.pool_allocate(64), p);
                  }}),
          racing(aborts(racing_free, pool_line("double free of a pool block"),
                        {[] {
                           frames f;
                           void* p = f.pool_allocate(64);
                           auto free_it = [&f, p] { f.pool_deallocate(p); };
                           at_once(free_it, free_it);
                           both_frees_accepted("frame_allocator::pool_deallocate");
                         },
                         [] {  // the owner (this thread) and another thread
                           frames f;
                           void* p = f.pool_allocate(64);
                           auto free_it = [&f, p] { f.pool_deallocate(p); };
                           at_once_with_this_thread(
                               free_it, [&f] { f.begin_frame(); }, free_it);
                           f.begin_frame();  // where an owner that lost the race is caught
                           both_frees_accepted("frame_allocator::pool_deallocate");
                         }})),
          aborts(other_instance, pool_line("block freed into the wrong frame allocator"), {[] {
                   frames one;
                   frames other;
                   (void)one.pool_allocate(64);
                   one.pool_deallocate(other.pool_allocate(64));
                 }}),
      }};
}

}  // namespace

std::vector<row> frame_rows() {
  return {frame_memory_row(), frame_pool_row()};
}

}  // namespace strata_misuse
