/* A/B timing of malloc+free pairs on a noisy machine: every library named is
 * loaded into this one process (dlopen, each with its own symbols) and their
 * pair loops run in alternation, a short burst each, so a slow phase of the
 * host falls on all of them alike. Prints the median and the fastest burst.
 *
 * Usage: pair_ab LIB.so|NAME... ROUNDS SIZE...
 *   e.g. pair_ab build-a/libstrata-malloc.so build-b/libstrata-malloc.so 300 16 64 4096
 * A NAME is a competitor: glibc, mimalloc (Debian's 2.0.9), mimalloc3 (3.4.3, from
 * scripts/install-deps.sh mimalloc3), jemalloc or tcmalloc; one not installed prints
 * a `missing` row.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { max_libraries = 8, max_rounds = 1000, pairs_per_burst = 200000 };

typedef void* (*malloc_fn)(size_t);
typedef void (*free_fn)(void*);

struct library {
  const char* path;
  const char* label; /* the competitor's name, or null to print the file's name */
  int missing;
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

struct competitor {
  const char* name;
  const char* path;
};

static const struct competitor competitors[] = {
    {"glibc", "libc.so.6"},
    {"mimalloc", PAIR_AB_SYSTEM_LIBDIR "/libmimalloc.so.2"},
    {"mimalloc3", PAIR_AB_MIMALLOC3_LIBRARY},
    {"jemalloc", PAIR_AB_SYSTEM_LIBDIR "/libjemalloc.so.2"},
    {"tcmalloc", PAIR_AB_SYSTEM_LIBDIR "/libtcmalloc_minimal.so.4"},
};

/* The competitor an argument names, so a run compares against the field by name; or null. */
static const struct competitor* named_competitor(const char* arg) {
  for (size_t i = 0; i < sizeof competitors / sizeof competitors[0]; i++) {
    if (strcmp(arg, competitors[i].name) == 0) return &competitors[i];
  }
  return NULL;
}

/* Open a competitor by name; one whose library is not installed is kept as missing. */
static void open_competitor(struct library* lib, const struct competitor* named) {
  lib->label = named->name;
  if (strchr(named->path, '/') != NULL && access(named->path, R_OK) != 0) {
    lib->path = named->path;
    lib->missing = 1;
    return;
  }
  open_library(lib, named->path);
}

static int usage(void) {
  fprintf(stderr, "usage: pair_ab LIB.so|NAME... ROUNDS SIZE...\n");
  return 2;
}

int main(int argc, char** argv) {
  static struct library libs[max_libraries];
  int count = 0, arg = 1;
  for (; arg < argc; arg++) {
    const struct competitor* named = named_competitor(argv[arg]);
    if (named == NULL && strstr(argv[arg], ".so") == NULL) break;
    if (count == max_libraries) return usage();
    if (named != NULL)
      open_competitor(&libs[count++], named);
    else
      open_library(&libs[count++], argv[arg]);
  }
  if (count == 0 || arg + 1 >= argc) return usage();
  int rounds = atoi(argv[arg++]);
  if (rounds < 1 || rounds > max_rounds) return usage();

  printf("%10s  %-24s %10s %10s\n", "size", "library", "median ns", "min ns");
  for (; arg < argc; arg++) {
    size_t size = (size_t)atol(argv[arg]);
    for (int l = 0; l < count; l++) {
      if (!libs[l].missing) pairs(&libs[l], size, 10000); /* thread and page set up */
    }
    for (int r = 0; r < rounds; r++) {
      for (int l = 0; l < count; l++) {
        if (libs[l].missing) continue;
        double start = now_ns();
        pairs(&libs[l], size, pairs_per_burst);
        libs[l].ns_per_pair[r] = (now_ns() - start) / pairs_per_burst;
      }
    }
    for (int l = 0; l < count; l++) {
      const char* slash = strrchr(libs[l].path, '/');
      const char* label = libs[l].label != NULL ? libs[l].label
                          : slash != NULL       ? slash + 1
                                                : libs[l].path;
      if (libs[l].missing) {
        printf("%10zu  %-24s %10s %10s\n", size, label, "missing", "missing");
        continue;
      }
      qsort(libs[l].ns_per_pair, (size_t)rounds, sizeof(double), compare_doubles);
      printf("%10zu  %-24s %10.3f %10.3f\n", size, label, libs[l].ns_per_pair[rounds / 2],
             libs[l].ns_per_pair[0]);
    }
  }
  return 0;
}
