// Runs the misuse matrix: one test per cell that has misuses to run, named
// <API>.<case>. Built twice: the cells of threads (wrong thread, two threads
// freeing one block) in a program labelled concurrency, which ThreadSanitizer
// runs too, and every other cell in a program of its own. gpu/tests/misuse
// builds the same two programs over the GPU rows (STRATA_MISUSE_GPU_ROWS).
#include <gtest/gtest.h>

#include <cctype>
#include <exception>
#include <string>
#include <typeinfo>

#include "misuse_matrix.hpp"
#if STRATA_MISUSE_GPU_ROWS
#include "gpu_rows.hpp"
#endif

#ifndef STRATA_MISUSE_THREAD_CELLS
#error "define STRATA_MISUSE_THREAD_CELLS: 1 for the cells of threads, 0 for the others"
#endif

namespace strata_misuse {
namespace {

// Whether this program runs the cell of case `what`.
bool runs_here(misuse_case what) {
  bool of_threads = what == misuse_case::wrong_thread || what == misuse_case::racing_free;
  return of_threads == (STRATA_MISUSE_THREAD_CELLS != 0);
}

// `text` as a regular expression that matches it literally.
std::string literal_pattern(const std::string& text) {
  std::string pattern;
  for (char c : text) {
    if (std::string(".[]{}()*+?^$|\\").find(c) != std::string::npos) pattern += '\\';
    pattern += c;
  }
  return pattern;
}

// What was thrown, for a failure message.
std::string describe(std::exception_ptr thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    return "an exception that is no std::exception";
  }
}

// Every act of the cell gives the cell's answer.
void check_cell(const cell& c) {
  for (std::size_t i = 0; i < c.acts.size(); ++i) {
    const auto& act = c.acts[i];
    switch (c.kind) {
      case answer_kind::aborts: {
        std::string line = literal_pattern(c.lines.empty() ? c.text : c.lines[i]);
        for (int run = 0; run < c.runs; ++run) EXPECT_DEATH(act(), line);
        break;
      }
      case answer_kind::throws:
        if (!c.matches) {  // the act checks its own exception (in a child)
          act();
          break;
        }
        try {
          act();
          ADD_FAILURE() << "no exception; expected " << c.text;
        } catch (...) {
          EXPECT_TRUE(c.matches(std::current_exception()))
              << "threw " << describe(std::current_exception()) << "; expected " << c.text;
        }
        break;
      case answer_kind::sets_errno:
      case answer_kind::returns:
        act();
        break;
      case answer_kind::not_applicable:
      case answer_kind::unchecked:
        break;
    }
  }
}

// A GoogleTest name made of the characters it allows.
std::string test_name(const std::string& text) {
  std::string name;
  for (char c : text) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep)
      name += c;
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

class cell_test : public ::testing::Test {
 public:
  explicit cell_test(const cell* c) : cell_(c) {}
  void TestBody() override { check_cell(*cell_); }

 private:
  const cell* cell_;
};

// The rows this program runs: the host's, or the GPU layer's.
const std::vector<row>& rows_run_here() {
#if STRATA_MISUSE_GPU_ROWS
  return gpu_misuse_rows();
#else
  return misuse_matrix();
#endif
}

// One test per cell that runs here, registered before main() runs the tests.
bool register_cells() {
  for (const row& r : rows_run_here()) {
    for (const cell& c : r.cells) {
      if (c.acts.empty() || !runs_here(c.what)) continue;
      ::testing::RegisterTest(test_name(r.api).c_str(), test_name(case_name(c.what)).c_str(),
                              nullptr, nullptr, __FILE__, __LINE__,
                              [&c]() -> ::testing::Test* { return new cell_test(&c); });
    }
  }
  return true;
}

[[maybe_unused]] const bool registered = register_cells();

}  // namespace
}  // namespace strata_misuse

// Under AddressSanitizer: the huge cells ask the C library (the arena's
// upstream) for sizes no memory holds; ASan's malloc would abort where the C
// library returns NULL and the arena throws std::bad_alloc.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}
