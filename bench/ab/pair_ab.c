/* A/B timing of malloc+free pairs on a noisy machine: every library named is
 * loaded into this one process (dlopen, each with its own symbols) and their
 * pair loops run in alternation, a short burst each, so a slow phase of the
 * host falls on all of them alike. Prints the median and the fastest burst.
 *
 * Usage: pair_ab LIB.so... ROUNDS SIZE...
 *   e.g. pair_ab build-a/libstrata-malloc.so build-b/libstrata-malloc.so 300 16 64 4096
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { max_libraries = 8, max_rounds = 1000, pairs_per_burst = 200000 };

typedef void* (*malloc_fn)(size_t);
typedef void (*free_fn)(void*);

struct library {
  const char* path;
  malloc_fn allocate;
  free_fn release;
  double ns_per_pair[max_rounds];
};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The measured loop; the volatile keeps each pair from being optimised away. */
__attribute__((noinline)) static void pairs(const struct library* lib, size_t size, int n) {
  for (int i = 0; i < n; i++) {
    void* volatile p = lib->allocate(size);
    lib->release(p);
  }
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Open `path` privately and find its malloc and free; exits with a message on failure. */
static void open_library(struct library* lib, const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "pair_ab: %s\n", dlerror());
    exit(1);
  }
  lib->path = path;
  lib->allocate = (malloc_fn)dlsym(handle, "malloc");
  lib->release = (free_fn)dlsym(handle, "free");
  if (lib->allocate == NULL || lib->release == NULL) {
    fprintf(stderr, "pair_ab: %s exports no malloc/free\n", path);
    exit(1);
  }
}

static int usage(void) {
  fprintf(stderr, "usage: pair_ab LIB.so... ROUNDS SIZE...\n");
  return 2;
}

int main(int argc, char** argv) {
  static struct library libs[max_libraries];
  int count = 0, arg = 1;
  for (; arg < argc && strstr(argv[arg], ".so") != NULL; arg++) {
    if (count == max_libraries) return usage();
    open_library(&libs[count++], argv[arg]);
  }
  if (count == 0 || arg + 1 >= argc) return usage();
  int rounds = atoi(argv[arg++]);
  if (rounds < 1 || rounds > max_rounds) return usage();

  printf("%10s  %-24s %10s %10s\n", "size", "library", "median ns", "min ns");
  for (; arg < argc; arg++) {
    size_t size = (size_t)atol(argv[arg]);
    for (int l = 0; l < count; l++) pairs(&libs[l], size, 10000); /* thread and page set up */
    for (int r = 0; r < rounds; r++) {
      for (int l = 0; l < count; l++) {
        double start = now_ns();
        pairs(&libs[l], size, pairs_per_burst);
        libs[l].ns_per_pair[r] = (now_ns() - start) / pairs_per_burst;
      }
    }
    for (int l = 0; l < count; l++) {
      qsort(libs[l].ns_per_pair, (size_t)rounds, sizeof(double), compare_doubles);
      const char* slash = strrchr(libs[l].path, '/');
      printf("%10zu  %-24s %10.3f %10.3f\n", size, slash != NULL ? slash + 1 : libs[l].path,
             libs[l].ns_per_pair[rounds / 2], libs[l].ns_per_pair[0]);
    }
  }
  return 0;
}
