// Memory given back across threads under the override: blocks of exited threads
// freed by another thread and then malloc_trim(0), and large and huge blocks
// freed by a thread that does not own them while their owner idles. Each time
// RSS must fall back to within 16 MiB of where it started.
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { threads = 8, blocks_per_thread = 16384 };
static const size_t mib = (size_t)1 << 20;
static const size_t slack = (size_t)16 << 20;

// VmRSS of this process in bytes, read without allocating.
static size_t rss(void) {
  static char buf[4096];
  FILE* f = fopen("/proc/self/status", "r");
  CHECK(f != NULL, "cannot open /proc/self/status");
  size_t kib = 0;
  while (fgets(buf, sizeof buf, f) != NULL)
    if (strncmp(buf, "VmRSS:", 6) == 0) sscanf(buf + 6, "%zu", &kib);
  fclose(f);
  return kib * 1024;
}

// One thread's 16,384 blocks of 1 KiB, written through; the thread then exits.
static void* allocate_kib_blocks(void* out) {
  void** blocks = out;
  for (int i = 0; i < blocks_per_thread; ++i) {
    blocks[i] = malloc(1024);
    CHECK(blocks[i] != NULL, "malloc(1024) failed");
    memset(blocks[i], i, 1024);
  }
  return NULL;
}

// Free every block of `arg` (a null-terminated array) from a thread of its own.
static void* free_all(void* arg) {
  for (void** p = arg; *p != NULL; ++p) free(*p);
  return NULL;
}

static void run_thread(void* (*body)(void*), void* arg) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, body, arg) == 0, "pthread_create failed");
  pthread_join(t, NULL);
}

int main(void) {
  free(malloc(64));
  size_t base = rss();

  // Blocks of exited threads, freed here, then malloc_trim(0).
  static void* blocks[threads][blocks_per_thread];
  pthread_t workers[threads];
  for (int t = 0; t < threads; ++t)
    CHECK(pthread_create(&workers[t], NULL, allocate_kib_blocks, blocks[t]) == 0, "create");
  for (int t = 0; t < threads; ++t) pthread_join(workers[t], NULL);
  CHECK(rss() > base + 100 * mib, "%zu MiB resident at the peak", (rss() - base) / mib);
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < blocks_per_thread; ++i) free(blocks[t][i]);
  malloc_trim(0);
  size_t now = rss();
  CHECK(now < base + slack, "%zu MiB over the start after malloc_trim(0)", (now - base) / mib);

  // A 256 MiB block freed by another thread: back at once, no call here since.
  base = rss();
  void* huge[2] = {malloc(256 * mib), NULL};
  CHECK(huge[0] != NULL, "malloc(256 MiB) failed");
  memset(huge[0], 1, 256 * mib);
  run_thread(free_all, huge);
  now = rss();
  CHECK(now < base + slack, "%zu MiB over the start after a 256 MiB block was freed",
        (now - base) / mib);

  // Sixty 4 MiB blocks freed by another thread.
  void* large[61] = {NULL};
  for (int i = 0; i < 60; ++i) {
    large[i] = malloc(4 * mib);
    CHECK(large[i] != NULL, "malloc(4 MiB) failed");
    memset(large[i], 1, 4 * mib);
  }
  run_thread(free_all, large);
  now = rss();
  CHECK(now < base + slack, "%zu MiB over the start after 60 blocks of 4 MiB were freed",
        (now - base) / mib);
  return 0;
}
