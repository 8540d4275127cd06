// A block allocated before the override took effect — here by glibc's own malloc,
// reached through the libc handle — later handed to the override's free(). That must
// not crash or corrupt the heap; the override may release it or leak it. Only glibc and
// strata promise this, so other allocators skip (77).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef void* (*malloc_function)(size_t);

// glibc's malloc itself, bypassing any preloaded definition.
static malloc_function glibc_malloc(void) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  CHECK(libc != NULL, "libc.so.6 is not loaded: %s", dlerror());
  malloc_function function = (malloc_function)dlsym(libc, "malloc");
  CHECK(function != NULL, "dlsym(libc, malloc): %s", dlerror());
  dlclose(libc);
  return function;
}

int main(void) {
  if (!strict_glibc_behaviour()) {
    puts("SKIP: only strata promises to accept pointers it did not allocate");
    return 77;
  }
  malloc_function foreign_malloc = glibc_malloc();
  static const size_t sizes[] = {8, 100, 1000, 20000, 200000, 4 << 20};
  enum { size_count = sizeof sizes / sizeof *sizes };
  void* foreign[size_count];
  for (int i = 0; i < size_count; ++i) {
    foreign[i] = foreign_malloc(sizes[i]);
    CHECK(foreign[i] != NULL, "glibc malloc(%zu)", sizes[i]);
    memset(foreign[i], 0x77, sizes[i]);
  }
  // The override keeps working around the foreign blocks, before and after freeing them.
  void* own = malloc(64);
  for (int i = 0; i < size_count; ++i) free(foreign[i]);
  for (int i = 0; i < 10000; ++i) {
    unsigned char* block = malloc(1 + (size_t)i % 5000);
    CHECK(block != NULL, "malloc after foreign free");
    block[0] = 1;
    free(block);
  }
  free(own);
  puts("foreign free ok");
  return 0;
}
