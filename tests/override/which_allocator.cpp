// Checks that the allocator in effect is the expected one: every allocation entry point,
// looked up the way the dynamic linker binds it, must resolve into the object named by
// the first argument (the link-time route), else into the library named by LD_PRELOAD,
// else into libc / libstdc++.
//
// Usage: which_allocator [EXPECTED-OBJECT]
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

// The real path of the object that defines `symbol` as the program binds it, or NULL
// when no loaded object exports it.
static const char* defining_object(const char* symbol, char* path) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  if (address == NULL) return NULL;
  Dl_info info;
  CHECK(dladdr(address, &info) != 0 && info.dli_fname != NULL, "dladdr failed for %s", symbol);
  // The main program may be reported with an empty name.
  const char* object = info.dli_fname[0] != '\0' ? info.dli_fname : "/proc/self/exe";
  CHECK(realpath(object, path) != NULL, "cannot resolve %s", object);
  return path;
}

// Whether the object at `path` is the expected provider of `symbol`.
static int is_expected_provider(const char* symbol, const char* path, const char* expected) {
  if (expected != NULL) return strcmp(path, expected) == 0;
  const char* base = strrchr(path, '/') + 1;
  if (symbol[0] == '_' && symbol[1] == 'Z') return strncmp(base, "libstdc++.so", 12) == 0;
  return strncmp(base, "libc.so", 7) == 0;
}

// Checks where each symbol of `symbols` resolves. A program linked statically against
// the override exports only the symbols some shared library also defines, so there an
// unexported one (cfree, which glibc no longer exports) is not an error.
static void check_symbols(const char* const* symbols, size_t count, const char* expected,
                          int statically_linked) {
  for (size_t i = 0; i < count; ++i) {
    char path[PATH_MAX];
    if (defining_object(symbols[i], path) == NULL) {
      CHECK(statically_linked, "%s is not defined anywhere", symbols[i]);
      continue;
    }
    CHECK(is_expected_provider(symbols[i], path, expected), "%s resolves into %s, not %s",
          symbols[i], path, expected != NULL ? expected : "the C/C++ runtime");
  }
}

int main(int argc, char** argv) {
  const char* provider = argc > 1 ? argv[1] : getenv("LD_PRELOAD");
  char provider_path[PATH_MAX];
  const char* expected = NULL;
  if (provider != NULL && provider[0] != '\0') {
    CHECK(realpath(provider, provider_path) != NULL, "cannot resolve %s", provider);
    expected = provider_path;
  }
  char program_path[PATH_MAX];
  CHECK(realpath("/proc/self/exe", program_path) != NULL, "cannot resolve /proc/self/exe");
  const int statically_linked = expected != NULL && strcmp(expected, program_path) == 0;
  // The program's own references must bind to the same functions dlsym finds.
  CHECK((void*)&malloc == dlsym(RTLD_DEFAULT, "malloc"), "&malloc is not the bound malloc");
  void* (*plain_new)(std::size_t) = &::operator new;
  // Linked in, strata's operator new leaves this program nothing to take from
  // a C++ runtime, so none may be loaded and nothing exports operator new.
  void* bound_new = dlsym(RTLD_DEFAULT, "_Znwm");
  CHECK(bound_new == NULL ? statically_linked : (void*)plain_new == bound_new,
        "&operator new is not the bound one");
  check_symbols(core_symbols, sizeof core_symbols / sizeof *core_symbols, expected,
                statically_linked);
  if (strict_glibc_behaviour() && expected != NULL) {
    check_symbols(strata_symbols, sizeof strata_symbols / sizeof *strata_symbols, expected,
                  statically_linked);
  }
  char path[PATH_MAX];
  CHECK(defining_object("malloc", path) != NULL, "malloc is not defined anywhere");
  printf("malloc is provided by %s\n", path);
  return 0;
}
