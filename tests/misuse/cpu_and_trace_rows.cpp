// Misuse rows of the CPU facade (cpu_allocator.hpp), whose frees are its
// backend's, and the trace reader (trace_reader.hpp), whose misuse is input.
#include <gtest/gtest.h>

#include <strata/cpu_allocator.hpp>
#include <strata/trace_reader.hpp>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

// The facade over strata's heap (its default backend).
strata::cpu_allocator_options strata_backend() {
  strata::cpu_allocator_options options;
  options.backend = strata::cpu_backend::strata;
  return options;
}

row cpu_allocator_row() {
  const char* backend = "the backend's answer: strata's heap, as heap_resource";
  const char* not_checked = "not checked: an object its owner destroys once";
  return {"strata::cpu_allocator",
          "cpu_allocator.hpp",
          "Resources",
          {
              returns(null_argument, "deallocate(nullptr, n) is a no-op: nothing counted", {[] {
                        strata::cpu_allocator cpu(strata_backend());
                        cpu.deallocate(nullptr, 100);
                        EXPECT_EQ(cpu.bytes_in_use(), 0u);
                      }}),
              returns(zero_size, "a block", {[] {
                        strata::cpu_allocator cpu(strata_backend());
                        void* p = cpu.allocate(0);
                        EXPECT_NE(p, nullptr);
                        cpu.deallocate(p, 0);
                      }}),
              throws<std::bad_alloc>(huge_size, "std::bad_alloc", "bad_alloc", {[] {
                                       strata::cpu_allocator cpu(strata_backend());
                                       (void)cpu.allocate(SIZE_MAX / 2);
                                     }}),
              throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                            "is not a power of two", {[] {
                                              strata::cpu_allocator cpu(strata_backend());
                                              (void)cpu.allocate(64, 24);
                                            }}),
              aborts(double_free, "strata: heap corruption: double free", {[] {
                       strata::cpu_allocator cpu(strata_backend());
                       void* p = cpu.allocate(64);
                       cpu.deallocate(p, 64);
                       cpu.deallocate(p, 64);
                     }}),
              unchecked(foreign_pointer, backend),
              unchecked(interior_pointer, backend),
              unchecked(use_after_destroy, not_checked),
              unchecked(destroy_twice, not_checked),
              returns(wrong_thread, "freed: any thread", {}),
              unchecked(racing_free, backend),
              returns(other_instance, "freed: facades over one backend share its blocks", {}),
          }};
}

// parse() or read_file() fails with `error` containing `part`.
void expect_refused(bool ok, const std::string& error, const char* part) {
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find(part), std::string::npos) << error;
}

row trace_reader_row() {
  const char* input = "reads input, holds no memory of its own";
  std::vector<cell> cells = {
      sets_errno(
          null_argument, "false, `error` says \"null buffer\" or \"null path\"", {[] {
            std::vector<strata::trace::record> out;
            std::string error;
            expect_refused(strata::trace::parse(nullptr, 100, out, error), error, "null buffer");
            expect_refused(strata::trace::read_file(nullptr, out, error), error, "null path");
          }}),
      sets_errno(zero_size, "false, `error` says \"truncated header\"", {[] {
                   std::vector<strata::trace::record> out;
                   std::string error;
                   expect_refused(strata::trace::parse(nullptr, 0, out, error), error,
                                  "truncated header");
                 }}),
      sets_errno(foreign_pointer, "false, `error` says \"bad magic\" (not a trace)", {[] {
                   std::vector<strata::trace::record> out;
                   std::string error;
                   std::vector<unsigned char> junk(256, 0x5a);
                   expect_refused(strata::trace::parse(junk.data(), junk.size(), out, error), error,
                                  "bad magic");
                 }}),
  };
  for (misuse_case c : {huge_size, bad_alignment, interior_pointer, double_free, use_after_destroy,
                        destroy_twice, wrong_thread, racing_free, other_instance})
    cells.push_back(not_applicable(c, input));
  return {"strata::trace::parse, read_file", "trace_reader.hpp", "Resources", cells};
}

}  // namespace

std::vector<row> cpu_and_trace_rows() {
  return {cpu_allocator_row(), trace_reader_row()};
}

}  // namespace strata_misuse
