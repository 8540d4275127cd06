#include "allocator_catalog.hpp"

#include <unistd.h>

namespace strata_bench {

// Debian 12 has no mimalloc 3: scripts/install-deps.sh takes this PyPI wheel into build/.
constexpr const char* mimalloc3_package = "cmeel-mimalloc==3.4.3";

std::vector<allocator_entry> allocator_catalog(const std::string& strata_library) {
  const std::string lib = STRATA_BENCH_SYSTEM_LIBDIR "/";
  return {
      {"strata", strata_library, "(built by this project: target strata-malloc)"},
      {"glibc", "", "libc6"},
      {"mimalloc", lib + "libmimalloc.so.2", "libmimalloc2.0"},
      {"mimalloc3", STRATA_BENCH_MIMALLOC3_LIBRARY, mimalloc3_package},
      {"jemalloc", lib + "libjemalloc.so.2", "libjemalloc2"},
      {"tcmalloc", lib + "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
      {"tbbmalloc", lib + "libtbbmalloc_proxy.so.2", "libtbbmalloc2"},
  };
}

std::string install_hint(const allocator_entry& entry) {
  if (entry.package.find("==") != std::string::npos)
    return "PyPI " + entry.package + ": scripts/install-deps.sh mimalloc3";
  return "Debian package " + entry.package;
}

bool allocator_available(const allocator_entry& entry) {
  return entry.library.empty() || access(entry.library.c_str(), R_OK) == 0;
}

}  // namespace strata_bench
