// Misuse rows of the session heap (session_heap.hpp): a bump buffer and a
// private heap, owned by the thread that made it; any thread frees.
#include <gtest/gtest.h>

#include <strata/session_heap.hpp>

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

constexpr const char* destroyed = "strata: use of a destroyed session_heap";
constexpr const char* not_owner = "strata: session_heap used from a thread that does not own it";
constexpr const char* double_freed = "strata: heap corruption: double free";

// A block of the session's heap, past its 4 KiB buffer.
void* overflow_block(strata::session_heap& s) {
  void* p = s.allocate(64);
  while (s.in_buffer(p)) p = s.allocate(64);
  return p;
}

row session_row() {
  return {"strata::session_heap",
          "session_heap.hpp",
          "Arenas, frames and sessions",
          {
              returns(null_argument, "deallocate(nullptr) is a no-op", {[] {
                        strata::session_heap s(4096);
                        s.deallocate(nullptr, 64);
                      }}),
              returns(zero_size, "a block", {[] {
                        strata::session_heap s(4096);
                        EXPECT_NE(s.allocate(0), nullptr);
                      }}),
              throws<std::bad_alloc>(huge_size, "std::bad_alloc", "bad_alloc", {[] {
                                       strata::session_heap s(4096);
                                       (void)s.allocate(SIZE_MAX);
                                     }}),
              throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                            "is not a power of two", {[] {
                                              strata::session_heap s(4096);
                                              (void)s.allocate(64, 24);
                                            }}),
              aborts(foreign_pointer,
                     "strata: heap corruption: free of a pointer strata did not allocate", {[] {
                       strata::session_heap s(4096);
                       s.deallocate(c_library_block(), 64);
                     }}),
              aborts_each(interior_pointer,
                          "a block of the heap: one line and abort; in the buffer: a no-op (the "
                          "buffer goes at once)",
                          {{"strata: heap corruption: free of a pointer strata did not hand out",
                            [] {
                              strata::session_heap s(4096);
                              s.deallocate(static_cast<char*>(overflow_block(s)) + 16, 16);
                            }}}),
              aborts_each(double_free,
                          "a block of the heap: one line and abort; in the buffer: a no-op (the "
                          "buffer goes at once)",
                          {{double_freed,
                            [] {
                              strata::session_heap s(4096);
                              void* p = overflow_block(s);
                              s.deallocate(p, 64);
                              s.deallocate(p, 64);
                            }}}),
              aborts(use_after_destroy, destroyed,
                     {[] {
                        strata::session_heap s(4096);
                        s.destroy();
                        (void)s.allocate(64);
                      },
                      [] {
                        strata::session_heap s(4096);
                        s.destroy();
                        s.rewind_buffer();
                      }}),
              aborts(destroy_twice, destroyed, {[] {
                       strata::session_heap s(4096);
                       s.destroy();
                       s.destroy();
                     }}),
              aborts(wrong_thread, not_owner,
                     {[] {
                        strata::session_heap s(1 << 20);
                        on_another_thread([&s] { (void)s.allocate(64); });
                      },
                      [] {
                        strata::session_heap s(4096);
                        on_another_thread([&s] { s.rewind_buffer(); });
                      }}),
              racing(aborts(racing_free, double_freed, {[] {
                              strata::session_heap s(4096);
                              void* p = overflow_block(s);
                              void* keep = overflow_block(s);
                              auto free_it = [&s, p] {
                                s.deallocate(p, 64);
                                strata_collect(0);
                              };
                              at_once(free_it, free_it);
                              both_frees_accepted("session_heap::deallocate");
                              s.deallocate(keep, 64);
                            }})),
              returns(other_instance,
                      "freed into the session it came from (blocks know their heap)", {[] {
                        strata::session_heap one(4096);
                        strata::session_heap other(4096);
                        one.deallocate(overflow_block(other), 64);
                      }}),
          }};
}

}  // namespace

std::vector<row> session_rows() {
  return {session_row()};
}

}  // namespace strata_misuse
