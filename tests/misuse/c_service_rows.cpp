// Misuse rows of the C API's statistics and options (strata.h): they take no
// block, so null outputs and out-of-range numbers are their misuses.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "answers.hpp"
#include "rows.hpp"
#include "strata/strata.h"

namespace strata_misuse {
namespace {

using enum misuse_case;

// A row of `call` whose cases but those given are not applicable for `reason`.
row service_row(const char* call, const char* reason, std::vector<cell> given) {
  std::vector<cell> cells = std::move(given);
  for (int c = 0; c < case_count; ++c) {
    bool answered = false;
    for (const cell& each : cells) answered |= each.what == misuse_case(c);
    if (!answered) cells.push_back(not_applicable(misuse_case(c), reason));
  }
  return {call, "strata.h", "C API: statistics and options", cells};
}

// Past the last option, within the enum's range (a value outside it is undefined).
const auto bad_option = static_cast<strata_option_t>(STRATA_OPTION_COUNT + 3);

}  // namespace

std::vector<row> c_service_rows() {
  const char* no_block = "takes no block, size or handle";
  return {
      service_row("strata_stats_get", no_block,
                  {sets_errno(null_argument, "ignored, errno EINVAL", {[] {
                                errno = 0;
                                strata_stats_get(nullptr);
                                EXPECT_EQ(errno, EINVAL);
                              }})}),
      service_row("strata_stats_print", no_block,
                  {returns(null_argument, "a null stream prints to stderr",
                           {[] { strata_stats_print(nullptr, 1); }})}),
      service_row("strata_size_class_size", no_block,
                  {returns(huge_size, "0 for a class past the last", {[] {
                             EXPECT_EQ(strata_size_class_size(STRATA_SIZE_CLASSES), 0u);
                             EXPECT_EQ(strata_size_class_size(SIZE_MAX), 0u);
                           }})}),
      service_row("strata_option_get", no_block,
                  {sets_errno(huge_size, "0, errno EINVAL for an option that does not exist", {[] {
                                for (strata_option_t option : {bad_option}) {
                                  errno = 0;
                                  EXPECT_EQ(strata_option_get(option), 0);
                                  EXPECT_EQ(errno, EINVAL);
                                }
                              }})}),
      service_row(
          "strata_option_set", no_block,
          {sets_errno(huge_size, "ignored, errno EINVAL for an option that does not exist", {[] {
                        for (strata_option_t option : {bad_option}) {
                          errno = 0;
                          strata_option_set(option, 1);
                          EXPECT_EQ(errno, EINVAL);
                        }
                      }})}),
      service_row(
          "strata_option_name", no_block,
          {sets_errno(huge_size, "NULL, errno EINVAL for an option that does not exist", {[] {
                        for (strata_option_t option : {bad_option}) {
                          errno = 0;
                          EXPECT_EQ(strata_option_name(option), nullptr);
                          EXPECT_EQ(errno, EINVAL);
                        }
                      }})}),
  };
}

}  // namespace strata_misuse
