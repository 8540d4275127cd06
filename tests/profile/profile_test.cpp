// The heap profiler through the C API: each known site's live bytes estimated
// within 10% from its folded stacks, on one thread and several, in a forked
// child; freed and reallocated samples leave the live profile; strata_profile_dump's errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.h"

namespace {

std::vector<void*> kept;

// The profiler's settings, before strata's first allocation reads them (the
// static library has no constructor of its own): a sample every 4 KiB on
// average keeps the samples many, a fixed seed draws the same ones each run.
__attribute__((constructor)) void profile_settings() {
  setenv("STRATA_PROFILE_LEAKS", "1", 1);
  setenv("STRATA_PROFILE_RATE", "4096", 1);
  setenv("STRATA_PROFILE_SEED", "1", 1);
}

std::string profile_path(const char* name) {
  return testing::TempDir() + name + "." + std::to_string(getpid());
}

// The live bytes of the stacks through `site` in the folded file of a dump to `path`.
double live_bytes(const std::string& path, const char* site) {
  EXPECT_EQ(strata_profile_dump(path.c_str()), 0) << strerror(errno);
  std::ifstream in(path + ".folded");
  double bytes = 0;
  for (std::string line; std::getline(in, line);) {
    auto space = line.rfind(' ');
    std::string stack(";");  // built by append: GCC 12's -Wrestrict misfires on ";" + string
    stack.append(line, 0, space).append(";");
    std::string frame(";");
    frame.append(site).append(";");
    if (stack.find(frame) != std::string::npos) bytes += std::stod(line.substr(space + 1));
  }
  return bytes;
}

void expect_near(double estimate, double exact) {
  EXPECT_NEAR(estimate, exact, exact / 10) << "estimate " << estimate << ", exact " << exact;
}

}  // namespace

// Each site allocates through the C API and keeps the block: not a tail call
// nor a clone (noipa),
// so its frame is on the sample's stack. Outside the anonymous namespace,
// so the dynamic symbol table names them.
extern "C" __attribute__((noipa)) void site_pages(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) kept.push_back(strata_malloc(4096));
}
extern "C" __attribute__((noipa)) void site_large(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) kept.push_back(strata_calloc(1, 100000));
}
extern "C" __attribute__((noipa)) void site_small(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) kept.push_back(strata_malloc(48));
}
extern "C" __attribute__((noipa)) void site_threads(std::vector<void*>& out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out.push_back(strata_malloc(256));
}
extern "C" __attribute__((noipa)) void site_freed(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) strata_free(strata_malloc(1024));
}

TEST(heap_profile, estimates_each_sites_live_bytes) {
  site_pages(2000);
  site_large(100);
  site_small(100000);
  std::string path = profile_path("sites");
  expect_near(live_bytes(path, "site_pages"), 2000 * 4096.0);
  expect_near(live_bytes(path, "site_large"), 100 * 100000.0);
  expect_near(live_bytes(path, "site_small"), 100000 * 48.0);
  // The profile.proto file holds the same samples: present and not empty.
  std::ifstream proto(path, std::ios::binary | std::ios::ate);
  EXPECT_GT(proto.tellg(), 100);
}

TEST(heap_profile, freed_samples_leave_the_live_profile) {
  site_freed(50000);
  std::string path = profile_path("freed");
  EXPECT_EQ(live_bytes(path, "site_freed"), 0);
  // A sampled block keeps its bytes through realloc and is freed as any other.
  for (int i = 0; i < 1000; ++i) {
    auto* p = static_cast<char*>(strata_malloc(8192));
    std::memset(p, 7, 8192);
    EXPECT_GE(strata_usable_size(p), 8192u);
    p = static_cast<char*>(strata_realloc(p, 20000));
    EXPECT_EQ(p[8191], 7);
    strata_free(p);
  }
}

TEST(heap_profile, threads_sample_their_allocations) {
  std::vector<std::vector<void*>> blocks(4);
  std::vector<std::thread> threads;
  for (auto& b : blocks) threads.emplace_back([&b] { site_threads(b, 20000); });
  for (auto& t : threads) t.join();
  expect_near(live_bytes(profile_path("threads"), "site_threads"), 4 * 20000 * 256.0);
}

TEST(heap_profile, forked_child_profiles_its_allocations) {
  site_pages(500);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    site_small(50000);
    double pages = live_bytes(profile_path("child"), "site_pages");
    double small = live_bytes(profile_path("child"), "site_small");
    bool near = pages > 0.9 * 500 * 4096 && pages < 1.1 * 500 * 4096 && small > 0.9 * 50000 * 48 &&
                small < 1.1 * 50000 * 48;
    _exit(near ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(heap_profile, dump_reports_errors) {
  strata_free(strata_malloc(16));  // the thread's first allocation starts the profiler
  errno = 0;
  EXPECT_EQ(strata_profile_dump(nullptr), EINVAL);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(strata_profile_dump(""), EINVAL);
  EXPECT_EQ(strata_profile_dump("/nonexistent-directory/profile"), ENOENT);
  EXPECT_EQ(errno, ENOENT);
}
