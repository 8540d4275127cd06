// Tests of option parsing: defaults, valid values, warnings for bad input, setting from code.
#include "options/options.hpp"

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "options/report_output.hpp"

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
  unsetenv("STRATA_STATS_FILE");
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
  EXPECT_EQ(err,
            "strata: warning: STRATA_NO_SUCH_OPTION=1: not a strata variable (see the "
            "Configuration table in strata's README); ignored\n");
}

// One warning per bad value, naming the variable and what it accepts.
TEST_F(Options, UnparsableValuesWarnAndFallBack) {
  setenv("STRATA_PURGE_DELAY_MS", "soon", 1);
  setenv("STRATA_VERBOSE", "maybe", 1);
  setenv("STRATA_ARENA_RESERVE", "12X", 1);
  std::string err = reload_capturing_warnings();
  EXPECT_NE(err.find("strata: warning: STRATA_PURGE_DELAY_MS=soon: not a number from -1 to "
                     "86400000 milliseconds (-1: never); using the default, 100\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("strata: warning: STRATA_VERBOSE=maybe: not a boolean (0/1, true/false, "
                     "yes/no, on/off); using the default, 0\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("strata: warning: STRATA_ARENA_RESERVE=12X: not a number from 0 to "
                     "64T bytes (K, M, G or T suffix); using the default, 0\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_VERBOSE), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 0);
}

// Numbers outside an option's range are refused as a bad word is: a purge
// delay below -1, a reservation above 64 TiB, a flag other than 0 or 1.
TEST_F(Options, OutOfRangeValuesWarnAndFallBack) {
  setenv("STRATA_PURGE_DELAY_MS", "-7", 1);
  setenv("STRATA_ARENA_RESERVE", "65T", 1);
  setenv("STRATA_SECURE", "2", 1);
  std::string err = reload_capturing_warnings();
  EXPECT_NE(err.find("STRATA_PURGE_DELAY_MS=-7: not a number from -1"), std::string::npos) << err;
  EXPECT_NE(err.find("STRATA_ARENA_RESERVE=65T: not a number from 0"), std::string::npos) << err;
  EXPECT_NE(err.find("STRATA_SECURE=2: not a boolean"), std::string::npos) << err;
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 0);
  setenv("STRATA_ARENA_RESERVE", "64T", 1);
  setenv("STRATA_PURGE_DELAY_MS", "86400000", 1);
  unsetenv("STRATA_SECURE");
  EXPECT_EQ(reload_capturing_warnings(), "");
  EXPECT_EQ(strata_option_get(STRATA_OPTION_ARENA_RESERVE), 64L << 40);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 86400000);
}

TEST_F(Options, OverflowIsUnparsable) {
  setenv("STRATA_PURGE_DELAY_MS", "99999999999999999999999", 1);
  EXPECT_NE(reload_capturing_warnings(), "");
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
}

TEST_F(Options, SettableFromCode) {
  EXPECT_EQ(strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 250), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 250);
  EXPECT_STREQ(strata_option_name(STRATA_OPTION_SHOW_ERRORS), "SHOW_ERRORS");
}

// An option that does not exist, or a value outside the option's range, is
// refused with EINVAL and changes nothing.
TEST_F(Options, SetRefusesWhatIsOutOfRange) {
  errno = 0;
  EXPECT_EQ(strata_option_set(STRATA_OPTION_COUNT, 1), EINVAL);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(strata_option_set(static_cast<strata_option_t>(99), 1), EINVAL);
  EXPECT_EQ(strata_option_set(static_cast<strata_option_t>(-1), 1), EINVAL);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_COUNT), 0);
  EXPECT_EQ(strata_option_set(STRATA_OPTION_SECURE, 7), EINVAL);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_SECURE), 0);
  EXPECT_EQ(strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, -2), EINVAL);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), 100);
  EXPECT_EQ(strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, -1), 0);
  EXPECT_EQ(strata_option_get(STRATA_OPTION_PURGE_DELAY_MS), -1);
}

TEST_F(Options, VerbosePrintsOptions) {
  setenv("STRATA_VERBOSE", "1", 1);
  testing::internal::CaptureStderr();
  options::reload_from_environment();  // the report output: a duplicate of the captured stderr
  options::print();
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("strata: option STRATA_PURGE_DELAY_MS=100"), std::string::npos);
  EXPECT_NE(out.find("strata: option STRATA_VERBOSE=1"), std::string::npos);
}

// Variables read elsewhere (the override's trace path, the CPU facade's backend,
// the GPU allocator, strata's tools and scripts) and build settings are not
// options: no warning.
TEST_F(Options, VariablesReadElsewhereAreNotUnknownOptions) {
  const char* others[] = {"STRATA_TRACE",          "STRATA_CPU_BACKEND",
                          "STRATA_GPU_ALLOC_CONF", "STRATA_GPU_ALLOC_LIBRARY",
                          "STRATA_REPLAY_PYTHON",  "STRATA_BENCH_PYTHON",
                          "STRATA_BENCH_RENDERER", "STRATA_FUZZ_SECONDS",
                          "STRATA_TRACKING",       "STRATA_OVERRIDE_PRELOAD",
                          "STRATA_GPU_TRACE"};
  for (const char* name : others) setenv(name, "0", 1);
  std::string err = reload_capturing_warnings();
  for (const char* name : others) unsetenv(name);
  EXPECT_EQ(err, "");
}

// A program may close its stderr before strata reports (coreutils do, before
// exit): when a report is asked for, strata writes to a duplicate taken at start.
TEST_F(Options, ReportsOutliveAClosedStderr) {
  setenv("STRATA_SHOW_STATS", "1", 1);
  FILE* captured = std::tmpfile();
  ASSERT_NE(captured, nullptr);
  int saved_stderr = dup(STDERR_FILENO);
  dup2(fileno(captured), STDERR_FILENO);
  options::reload_from_environment();
  close(STDERR_FILENO);
  options::print();
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  std::string printed(4096, '\0');
  printed.resize(pread(fileno(captured), printed.data(), printed.size(), 0));
  std::fclose(captured);
  EXPECT_NE(printed.find("strata: option STRATA_SHOW_STATS=1"), std::string::npos) << printed;
}

// STRATA_STATS_FILE: reports are appended to that file instead.
TEST_F(Options, ReportsGoToTheStatsFile) {
  char path[] = "/tmp/strata-stats-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "before\n", 7), 7);
  close(fd);
  setenv("STRATA_STATS_FILE", path, 1);
  options::reload_from_environment();
  EXPECT_TRUE(options::report_output_is_stats_file());
  options::print();
  unsetenv("STRATA_STATS_FILE");
  options::reload_from_environment();
  EXPECT_FALSE(options::report_output_is_stats_file());
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  unlink(path);
  EXPECT_EQ(text.rfind("before\nstrata: option STRATA_VERBOSE=0\n", 0), 0u) << text;
}
