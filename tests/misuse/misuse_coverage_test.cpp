// The matrix is complete: every row answers every case once, and every public
// header declares a row or says why it has none, so an allocator added to
// include/strata without its row fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "misuse_matrix.hpp"

namespace strata_misuse {
namespace {

TEST(misuse_matrix, every_row_answers_every_case_once) {
  for (const row& r : misuse_matrix()) {
    int answers[case_count] = {};
    for (const cell& c : r.cells) ++answers[static_cast<int>(c.what)];
    for (int c = 0; c < case_count; ++c)
      EXPECT_EQ(answers[c], 1) << r.api << ": case " << case_name(misuse_case(c));
  }
}

TEST(misuse_matrix, every_public_header_has_a_row_or_an_exemption) {
  std::set<std::string> covered;
  for (const row& r : misuse_matrix()) covered.insert(r.header);
  for (const exempt_header& e : exempt_headers()) covered.insert(e.header);
  std::filesystem::path include_dir = STRATA_INCLUDE_DIR;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(include_dir)) {
    if (!entry.is_regular_file()) continue;
    std::string header = entry.path().lexically_relative(include_dir).generic_string();
    EXPECT_TRUE(covered.count(header) != 0) << header << " has no misuse row and no exemption";
  }
}

TEST(misuse_matrix, cells_that_run_say_what_they_check) {
  for (const row& r : misuse_matrix())
    for (const cell& c : r.cells)
      EXPECT_FALSE(c.text.empty()) << r.api << ": " << case_name(c.what) << " has no answer";
}

}  // namespace
}  // namespace strata_misuse
