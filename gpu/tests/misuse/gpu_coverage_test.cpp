// The GPU rows are complete: each answers every case once, and every header
// of gpu/include/strata/gpu declares a row or says why it has none.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "gpu_rows.hpp"

namespace strata_misuse {
namespace {

TEST(gpu_misuse_matrix, every_row_answers_every_case_once) {
  for (const row& r : gpu_misuse_rows()) {
    int answers[case_count] = {};
    for (const cell& c : r.cells) ++answers[static_cast<int>(c.what)];
    for (int c = 0; c < case_count; ++c)
      EXPECT_EQ(answers[c], 1) << r.api << ": case " << case_name(misuse_case(c));
  }
}

TEST(gpu_misuse_matrix, every_gpu_header_has_a_row_or_an_exemption) {
  std::set<std::string> covered;
  for (const row& r : gpu_misuse_rows()) covered.insert(r.header);
  for (const exempt_header& e : gpu_exempt_headers()) covered.insert(e.header);
  std::filesystem::path include_dir = STRATA_GPU_INCLUDE_DIR;  // gpu/include/strata
  for (const auto& entry : std::filesystem::recursive_directory_iterator(include_dir / "gpu")) {
    if (!entry.is_regular_file()) continue;
    std::string header = entry.path().lexically_relative(include_dir).generic_string();
    EXPECT_TRUE(covered.count(header) != 0) << header << " has no misuse row and no exemption";
  }
}

}  // namespace
}  // namespace strata_misuse
