// The misuse matrix: for every public allocator, adaptor and C API function,
// one row answering the same twelve misuse cases. The rows are one list: the
// tests (misuse_matrix_test.cpp) run each cell and check its documented answer,
// and docs/misuse.md is printed from the same list (misuse_tables_main.cpp).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace strata_misuse {

// The cases every row answers, in table order.
enum class misuse_case {
  null_argument,
  zero_size,
  huge_size,
  bad_alignment,
  foreign_pointer,
  interior_pointer,
  double_free,
  use_after_destroy,
  destroy_twice,
  wrong_thread,
  racing_free,
  other_instance,
};
inline constexpr int case_count = 12;

// The column heading and the one-line meaning of a case.
const char* case_name(misuse_case c);
const char* case_meaning(misuse_case c);

// How a cell answers. Every misuse gets a clear answer: a value or errno the
// caller can test, an exception naming the call, or one line and abort.
enum class answer_kind {
  aborts,          // one line on stderr, then abort: `text` is the line's start
  throws,          // an exception: `text` names its type and what() part
  sets_errno,      // NULL (or the documented value) with errno set: `text` says which
  returns,         // a documented, harmless result (no-op, a value): `text` says which
  not_applicable,  // the case does not arise for this API: `text` says why
  unchecked,       // a configuration that opts out of the check: `text` says which
};

// One cell: the case, the answer, and the misuses that show it. Each act
// performs one misuse: for `aborts` it must not return, for `throws` it must
// throw (checked against `matches`), for the others it checks its own result
// with GoogleTest assertions. Cells of no act are documented, not run.
struct cell {
  misuse_case what;
  answer_kind kind;
  std::string text;                                 // the documented answer
  std::vector<std::function<void()>> acts;          // the misuses, run by the test
  std::vector<std::string> lines;                   // aborts: each act's line, where they differ
  std::function<bool(std::exception_ptr)> matches;  // throws: the exception expected
  int runs = 1;  // racing cells: independent runs, each in a child of its own
};

// One API: every case answered once, in any order.
struct row {
  std::string api;      // as a user writes it: "strata_heap_malloc", "strata::bfc<>"
  std::string header;   // the public header it is declared in
  std::string section;  // the table it is printed in
  std::vector<cell> cells;
};

// The whole list, built once.
const std::vector<row>& misuse_matrix();

// Headers of include/strata that declare no allocator, adaptor or C function,
// each with the reason it has no row.
struct exempt_header {
  const char* header;
  const char* reason;
};
const std::vector<exempt_header>& exempt_headers();

}  // namespace strata_misuse
