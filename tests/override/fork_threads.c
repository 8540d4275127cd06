// fork() from a multi-threaded program while the other threads allocate and free
// (including frees of each other's blocks). Each child allocates with every size
// class, frees blocks its parent's threads allocated, starts a thread of its own and
// exits with exit(); a child that deadlocks is killed by alarm() and fails the test.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { worker_count = 3, shared_slot_count = 256, default_fork_count = 100 };

// Blocks handed between workers: whoever swaps one out frees it.
static _Atomic(void*) shared_slots[shared_slot_count];
static atomic_int stop_workers;

// A small xorshift generator, one per thread, so no thread shares state.
static uint32_t next_random(uint32_t* state) {
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return *state;
}

// The size for a random draw: mostly small, sometimes medium, rarely huge.
static size_t random_size(uint32_t draw) {
  switch (draw % 16) {
    case 0:
      return 20000 + draw % 200000;
    case 1:
      return draw % 64 == 1 ? (size_t)4 << 20 : 3000;
    default:
      return 1 + draw % 512;
  }
}

// Allocates and frees continuously, swapping blocks through the shared slots.
static void* worker(void* seed) {
  uint32_t state = (uint32_t)(uintptr_t)seed;
  while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
    uint32_t draw = next_random(&state);
    size_t size = random_size(draw);
    unsigned char* block = draw & 1 ? malloc(size) : calloc(1, size);
    if (block == NULL) continue;
    block[0] = block[size - 1] = (unsigned char)draw;
    void* previous = atomic_exchange(&shared_slots[draw % shared_slot_count], block);
    free(previous);
    void* local = realloc(malloc(16), 1 + draw % 4096);
    free(local);
  }
  return NULL;
}

// Allocation in the child's own new thread.
static void* child_thread(void* unused) {
  (void)unused;
  for (int i = 0; i < 1000; ++i) free(malloc(1 + (size_t)i * 37 % 70000));
  return malloc(123);
}

// The child: allocate, free the parent's blocks, run a thread, exit through exit().
static void run_child(void) {
  alarm(10);
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc((size_t)1 << (i % 19));
    CHECK(blocks[i] != NULL, "child malloc");
    memset(blocks[i], i, (size_t)1 << (i % 19));
  }
  for (int i = 0; i < shared_slot_count; ++i) {
    free(atomic_exchange(&shared_slots[i], NULL));
  }
  pthread_t thread;
  void* from_thread = NULL;
  CHECK(pthread_create(&thread, NULL, child_thread, NULL) == 0, "child pthread_create");
  pthread_join(thread, &from_thread);
  free(from_thread);
  for (int i = 0; i < 64; ++i) free(blocks[i]);
  exit(0);
}

int main(int argc, char** argv) {
  int fork_count = argc > 1 ? atoi(argv[1]) : default_fork_count;
  pthread_t workers[worker_count];
  for (int i = 0; i < worker_count; ++i) {
    CHECK(pthread_create(&workers[i], NULL, worker, (void*)(uintptr_t)(2654435761u * (i + 1))) == 0,
          "pthread_create");
  }
  for (int round = 0; round < fork_count; ++round) {
    void* parent_block = malloc(1000 + (size_t)round);
    pid_t child = fork();
    CHECK(child >= 0, "fork failed in round %d", round);
    if (child == 0) {
      free(parent_block);
      run_child();
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(!WIFSIGNALED(status), "child %d died of signal %d (%s)", round, WTERMSIG(status),
          WTERMSIG(status) == SIGALRM ? "deadlocked" : "crashed");
    CHECK(WEXITSTATUS(status) == 0, "child %d exited with %d", round, WEXITSTATUS(status));
    free(parent_block);
  }
  atomic_store(&stop_workers, 1);
  for (int i = 0; i < worker_count; ++i) pthread_join(workers[i], NULL);
  for (int i = 0; i < shared_slot_count; ++i) free(atomic_exchange(&shared_slots[i], NULL));
  printf("%d forks ok\n", fork_count);
  return 0;
}
