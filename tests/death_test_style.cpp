// Every test program's death tests re-execute the program ("threadsafe")
// instead of forking it where it stands: strata's purge thread may hold a heap
// lock at that moment, and a forked child would then wait on it forever.
#include <gtest/gtest.h>

namespace {

// Set after the command line is read, before the first test runs.
class threadsafe_death_tests : public ::testing::Environment {
 public:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

[[maybe_unused]] ::testing::Environment* const registered =
    ::testing::AddGlobalTestEnvironment(new threadsafe_death_tests);

}  // namespace
