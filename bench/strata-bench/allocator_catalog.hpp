// The general-purpose allocators strata-bench compares, each loaded into its own worker
// process with LD_PRELOAD (glibc: nothing preloaded).
#pragma once

#include <string>
#include <vector>

namespace strata_bench {

struct allocator_entry {
  std::string name;     // "glibc", "mimalloc", ...
  std::string library;  // the shared object to preload; empty for glibc
  std::string package;  // the Debian package that provides it, or PyPI's "name==version"
};

// Every competitor, strata first; `strata_library` is the path of libstrata-malloc.so.
std::vector<allocator_entry> allocator_catalog(const std::string& strata_library);

// How to install it: "Debian package libjemalloc2", or the install-deps.sh step of a wheel.
std::string install_hint(const allocator_entry& entry);

// Whether this allocator can run here: true when its library exists (always for glibc).
bool allocator_available(const allocator_entry& entry);

}  // namespace strata_bench
