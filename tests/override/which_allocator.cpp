// Checks that the allocator in effect is the preloaded one: every allocation entry
// point, looked up the way the dynamic linker binds it, must resolve into the library
// named by LD_PRELOAD (or into libc / libstdc++ when nothing is preloaded).
#include <dlfcn.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <cstddef>
#include <new>

#include "check.h"

// Entry points every malloc replacement provides.
static const char* const core_symbols[] = {
    "malloc",
    "free",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "malloc_usable_size",
    "_Znwm" /* new */,
    "_ZdlPv" /* delete */,
    "_Znam" /* new[] */,
    "_ZdaPv" /* delete[] */,
};

// Entry points strata promises on top (issue 4), checked in strict mode.
static const char* const strata_symbols[] = {
    "pvalloc",
    "reallocarray",
    "malloc_trim",
    "mallinfo2",
    "cfree",
    "__libc_malloc",
    "__libc_free",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    "__libc_valloc",
    "__libc_pvalloc",
    "__posix_memalign",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZdlPvm",
    "_ZdaPvm",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t",
    "_ZdaPvmSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

// The real path of the object that defines `symbol` as the program binds it.
static const char* defining_object(const char* symbol, char* path) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  CHECK(address != NULL, "%s is not defined anywhere", symbol);
  Dl_info info;
  CHECK(dladdr(address, &info) != 0 && info.dli_fname != NULL, "dladdr failed for %s", symbol);
  CHECK(realpath(info.dli_fname, path) != NULL, "cannot resolve %s", info.dli_fname);
  return path;
}

// Whether the object at `path` is the expected provider of `symbol`.
static int is_expected_provider(const char* symbol, const char* path, const char* preloaded) {
  if (preloaded != NULL) return strcmp(path, preloaded) == 0;
  const char* base = strrchr(path, '/') + 1;
  if (symbol[0] == '_' && symbol[1] == 'Z') return strncmp(base, "libstdc++.so", 12) == 0;
  return strncmp(base, "libc.so", 7) == 0;
}

// Checks each symbol of `symbols` and prints where it resolved.
static void check_symbols(const char* const* symbols, size_t count, const char* preloaded) {
  for (size_t i = 0; i < count; ++i) {
    char path[PATH_MAX];
    defining_object(symbols[i], path);
    CHECK(is_expected_provider(symbols[i], path, preloaded), "%s resolves into %s, not %s",
          symbols[i], path, preloaded != NULL ? preloaded : "the C/C++ runtime");
  }
}

int main(void) {
  const char* preload = getenv("LD_PRELOAD");
  char preloaded[PATH_MAX];
  const char* expected = NULL;
  if (preload != NULL && preload[0] != '\0') {
    CHECK(realpath(preload, preloaded) != NULL, "cannot resolve LD_PRELOAD=%s", preload);
    expected = preloaded;
  }
  // The program's own references must bind to the same functions dlsym finds.
  CHECK((void*)&malloc == dlsym(RTLD_DEFAULT, "malloc"), "&malloc is not the bound malloc");
  void* (*plain_new)(std::size_t) = &::operator new;
  CHECK((void*)plain_new == dlsym(RTLD_DEFAULT, "_Znwm"), "&operator new is not the bound one");
  check_symbols(core_symbols, sizeof core_symbols / sizeof *core_symbols, expected);
  if (strict_glibc_behaviour() && expected != NULL) {
    check_symbols(strata_symbols, sizeof strata_symbols / sizeof *strata_symbols, expected);
  }
  char path[PATH_MAX];
  printf("malloc is provided by %s\n", defining_object("malloc", path));
  return 0;
}
