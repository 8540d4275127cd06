// dlopen/dlclose of a library that allocates, repeated: threads started before the
// dlopen and threads started after it all call into the library; blocks cross the
// boundary both ways, and one block per round outlives the library's dlclose.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { threads_per_kind = 3, default_round_count = 100, churn_iterations = 3000 };

// The library's entry points, looked up after each dlopen.
struct library {
  void* handle;
  char* (*repeat)(const char*, int);
  int (*release)(void*, unsigned char);
  unsigned (*churn)(int);
};

struct round_state {
  pthread_barrier_t library_loaded;  // threads started before dlopen wait here
  struct library library;
};

// What each thread does with the library: churn, and move blocks both ways.
static void* use_library(void* argument) {
  struct round_state* state = argument;
  const struct library* library = &state->library;
  unsigned expected = 0;
  for (int i = 0; i < churn_iterations; ++i) expected += (unsigned char)i;
  CHECK(library->churn(churn_iterations) == expected, "library churn result");
  for (int i = 1; i < 50; ++i) {
    char* from_library = library->repeat("ab", i);
    CHECK(from_library != NULL && strlen(from_library) == (size_t)i * 2, "library_repeat");
    free(from_library);
    unsigned char* to_library = malloc((size_t)i * 100);
    CHECK(to_library != NULL, "malloc");
    to_library[0] = (unsigned char)i;
    CHECK(library->release(to_library, (unsigned char)i), "library_release saw wrong byte");
  }
  return NULL;
}

// A thread started before dlopen: waits until the library is loaded, then uses it.
static void* use_library_once_loaded(void* argument) {
  struct round_state* state = argument;
  pthread_barrier_wait(&state->library_loaded);
  return use_library(state);
}

// Loads the library and resolves its entry points.
static void load_library(const char* path, struct library* library) {
  library->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(library->handle != NULL, "dlopen: %s", dlerror());
  library->repeat = (char* (*)(const char*, int))dlsym(library->handle, "library_repeat");
  library->release = (int (*)(void*, unsigned char))dlsym(library->handle, "library_release");
  library->churn = (unsigned (*)(int))dlsym(library->handle, "library_churn");
  CHECK(library->repeat && library->release && library->churn, "dlsym: %s", dlerror());
}

// One round: threads before, dlopen, threads after, join, dlclose; returns a block
// the library allocated, to be freed after the library is gone.
static char* run_round(const char* path) {
  struct round_state state;
  pthread_barrier_init(&state.library_loaded, NULL, threads_per_kind + 1);
  pthread_t before[threads_per_kind], after[threads_per_kind];
  for (int i = 0; i < threads_per_kind; ++i) {
    CHECK(pthread_create(&before[i], NULL, use_library_once_loaded, &state) == 0, "thread");
  }
  load_library(path, &state.library);
  pthread_barrier_wait(&state.library_loaded);
  for (int i = 0; i < threads_per_kind; ++i) {
    CHECK(pthread_create(&after[i], NULL, use_library, &state) == 0, "thread");
  }
  use_library(&state);
  for (int i = 0; i < threads_per_kind; ++i) {
    pthread_join(before[i], NULL);
    pthread_join(after[i], NULL);
  }
  char* survivor = state.library.repeat("survivor", 3);
  CHECK(dlclose(state.library.handle) == 0, "dlclose: %s", dlerror());
  pthread_barrier_destroy(&state.library_loaded);
  return survivor;
}

int main(int argc, char** argv) {
  CHECK(argc >= 2, "usage: %s LIBRARY [ROUNDS]", argv[0]);
  int round_count = argc > 2 ? atoi(argv[2]) : default_round_count;
  for (int round = 0; round < round_count; ++round) {
    char* survivor = run_round(argv[1]);
    CHECK(strcmp(survivor, "survivorsurvivorsurvivor") == 0, "block outliving dlclose");
    free(survivor);
  }
  printf("%d dlopen rounds ok\n", round_count);
  return 0;
}
