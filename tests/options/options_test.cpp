// Tests of option parsing: defaults, valid values, warnings for bad input, setting from code.
#include "options/options.hpp"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace options = strata::options;

namespace {
// Run reload with stderr captured; returns what was printed.
std::string reload_capturing_warnings() {
  testing::internal::CaptureStderr();
  options::reload_from_environment();
  return testing::internal::GetCapturedStderr();
}

void clear_strata_environment() {
  for (int i = 0; i < STRATA_OPTION_COUNT; ++i)
    unsetenv(
        (std::string("STRATA_") + strata_option_name(static_cast<strata_option_t>(i))).c_str());
  unsetenv("STRATA_NO_SUCH_OPTION");
}

class Options : public testing::Test {
 protected:
  void SetUp() override { clear_strata_environment(); }
  void TearDown() override {
    clear_strata_environment();
    options::reload_from_environment();
  }
};
}  // namespace

TEST_F(Options, Defaults) {
  EXPECT_EQ(reload_capturing_warnings(), "");
  EXPECT_EQ(strata_option_get(STRATA_OPTION_VERBOSE), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DECOMMITS), 1);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_THREAD), 1);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 0);
}

TEST_F(Options, ParsesFlagsNumbersAndSizes) {
  setenv("STRATA_SHOW_STATS", "yes", 1);
  setenv("STRATA_SECURE", "ON", 1);
  setenv("STRATA_LARGE_OS_PAGES", "false", 1);
  setenv("STRATA_PURGE_DELAY_MS", "-1", 1);
  setenv("STRATA_ARENA_RESERVE", "256MiB", 1);
  EXPECT_EQ(reload_capturing_warnings(), "");
  EXPECT_EQ(strata_option_get(STRATA_OPTION_SHOW_STATS), 1);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_SECURE), 1);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_LARGE_OS_PAGES), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), -1);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 256L << 20);
  setenv("STRATA_ARENA_RESERVE", "2g", 1);
  reload_capturing_warnings();
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 2L << 30);
}

TEST_F(Options, UnknownVariableWarnsOnce) {
  setenv("STRATA_NO_SUCH_OPTION", "1", 1);
  std::string err = reload_capturing_warnings();
  EXPECT_EQ(err, "strata: warning: unknown option 'STRATA_NO_SUCH_OPTION=1'; using the default\n");
}

TEST_F(Options, UnparsableValuesWarnAndFallBack) {
  setenv("STRATA_PURGE_DELAY_MS", "soon", 1);
  setenv("STRATA_VERBOSE", "maybe", 1);
  setenv("STRATA_ARENA_RESERVE", "12X", 1);
  std::string err = reload_capturing_warnings();
  EXPECT_NE(err.find("unparsable value in 'STRATA_PURGE_DELAY_MS=soon'"), std::string::npos);
  EXPECT_NE(err.find("unparsable value in 'STRATA_VERBOSE=maybe'"), std::string::npos);
  EXPECT_NE(err.find("unparsable value in 'STRATA_ARENA_RESERVE=12X'"), std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_VERBOSE), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 0);
}

TEST_F(Options, OverflowIsUnparsable) {
  setenv("STRATA_PURGE_DELAY_MS", "99999999999999999999999", 1);
  EXPECT_NE(reload_capturing_warnings(), "");
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
}

TEST_F(Options, SettableFromCode) {
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 250);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 250);
  strata_option_set(STRATA_OPTION_COUNT, 1);  // out of range: ignored
  EXPECT_EQ(strata_option_get(STRATA_OPTION_COUNT), 0);
  EXPECT_STREQ(strata_option_name(STRATA_OPTION_SHOW_ERRORS), "SHOW_ERRORS");
}

TEST_F(Options, VerbosePrintsOptions) {
  setenv("STRATA_VERBOSE", "1", 1);
  options::reload_from_environment();
  testing::internal::CaptureStderr();
  options::print();
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("strata: option STRATA_PURGE_DELAY_MS=100"), std::string::npos);
  EXPECT_NE(out.find("strata: option STRATA_VERBOSE=1"), std::string::npos);
}

// Variables read elsewhere (the override's trace path, the CPU facade's backend,
// the GPU allocator's configuration) are not options: no warning.
TEST_F(Options, VariablesReadElsewhereAreNotUnknownOptions) {
  setenv("STRATA_TRACE", "/tmp/some.trace", 1);
  setenv("STRATA_CPU_BACKEND", "libc", 1);
  setenv("STRATA_GPU_ALLOC_CONF", "max_split_size_mb:64", 1);
  std::string err = reload_capturing_warnings();
  unsetenv("STRATA_TRACE");
  unsetenv("STRATA_CPU_BACKEND");
  unsetenv("STRATA_GPU_ALLOC_CONF");
  EXPECT_EQ(err, "");
}
