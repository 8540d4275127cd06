// An installed strata-replay finds its files at fixed places relative to its
// own directory (bin/ -> lib/, share/strata/), so an install works from any
// prefix; one run from the build tree finds no such files there and uses the
// build and source trees it was built in.
#include "install_layout.hpp"

#include <unistd.h>
#include <climits>
#include <cstdlib>

namespace strata_replay {

namespace {

// `relative` resolved against this executable's directory, if that file exists.
std::string beside_executable(const char* relative) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return {};
  std::string file(path, static_cast<std::size_t>(n));
  file = file.substr(0, file.rfind('/') + 1) + relative;
  char resolved[PATH_MAX];
  return realpath(file.c_str(), resolved) != nullptr ? resolved : std::string();
}

// The installed file if there is one, else the build-time one.
std::string installed_or(const char* relative, const char* built) {
  std::string installed = beside_executable(relative);
  return installed.empty() ? built : installed;
}

}  // namespace

std::string default_strata_library() {
  return installed_or(STRATA_REPLAY_INSTALLED_LIBRARY, STRATA_REPLAY_STRATA_LIBRARY);
}

std::string plot_script() {
  return installed_or(STRATA_REPLAY_INSTALLED_PLOT_SCRIPT, STRATA_REPLAY_PLOT_SCRIPT);
}

}  // namespace strata_replay
