// A C program under the override: no C++ runtime is loaded with it (libstdc++
// alone costs about 1 MiB of resident memory), nor the C math library (about
// 0.3 MiB: the samplers compute their own logarithm), and a C++ library it
// loads later with dlopen still gets operator new's failures right.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

// Whether a mapping of this process names `library`.
static int mapped(const char* library) {
  FILE* maps = fopen("/proc/self/maps", "r");
  CHECK(maps != NULL, "cannot read /proc/self/maps");
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, library) != NULL;
  fclose(maps);
  return found;
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s <c++ plugin>", argv[0]);
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc((size_t)(i + 1) * 48);
    CHECK(blocks[i] != NULL, "malloc");
  }
  for (int i = 0; i < 64; ++i) free(blocks[i]);
  CHECK(!mapped("libstdc++"), "a C++ runtime is loaded in a C program");
  CHECK(!mapped("/libm.so"), "the C math library is loaded in a C program");

  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(plugin != NULL, "dlopen: %s", dlerror());
  int (*failures_answered)(void) = (int (*)(void))dlsym(plugin, "cxx_plugin_failures_answered");
  CHECK(failures_answered != NULL, "dlsym: %s", dlerror());
  int failed = failures_answered();
  CHECK(failed == 0, "operator new check %d of the C++ plugin failed", failed);
  puts("c program ok");
  return 0;
}
