/* strata-bench's heap scenarios of issue 35, shrunk for instruction counting:
   `scenario NAME N` runs N steps of NAME in run(), which callgrind collects alone
   (scenario.sh takes the difference of two lengths, so set-up cancels out).
     random-working-set: 4,000 live blocks of 8 B + 40 KiB x u^8, a random one
                         replaced per step (first byte written), one thread;
     leak-loop:          rounds of 10,000 mallocs of 16-512 B, all but one in
                         fifty freed; a step is one malloc and its free;
     server-handoff:     1,000 blocks of 10-1,000 B passed from thread to thread,
                         each replacing random ones (freeing its predecessor's);
                         a step is one replacement, 5 threads in turn.
   Its own code, modelled on the strata-bench scenarios; the generator is
   xorshift so that the C program needs no library. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 35;

/* The next pseudo-random 64-bit number (xorshift64*). */
static uint64_t next_random(void) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static double next_unit(void) {
  return (double)(next_random() >> 11) / 9007199254740992.0;
}

enum { working_set = 4000, leak_block_count = 10000, handoff_blocks = 1000, handoff_threads = 5 };

struct step {
  uint32_t slot;
  uint32_t size;
};

static struct step* steps;
static char* blocks[leak_block_count];
static char* leaked[1 << 20]; /* leak-loop's blocks, never freed */
static int leaked_count;

/* Steps of random-working-set: drawn up front, so run() counts only the heap. */
static void draw_working_set(int n) {
  for (int i = 0; i < n; i++) {
    steps[i].slot = (uint32_t)(next_random() % working_set);
    steps[i].size = 8 + (uint32_t)(pow(next_unit(), 8) * 40960.0);
  }
}

/* Steps of server-handoff. */
static void draw_handoff(int n) {
  for (int i = 0; i < n; i++) {
    steps[i].slot = (uint32_t)(next_random() % handoff_blocks);
    steps[i].size = 10 + (uint32_t)(next_random() % 991);
  }
}

/* Sizes of leak-loop's round, the same every round. */
static void draw_leak(void) {
  for (int i = 0; i < leak_block_count; i++) steps[i].size = 16 + (uint32_t)(next_random() % 497);
}

struct turn {
  const struct step* first;
  int count;
};

/* One thread's turn of server-handoff: its predecessor's blocks freed as it replaces them. */
static void* handoff_turn(void* arg) {
  const struct turn* t = arg;
  for (int i = 0; i < t->count; i++) {
    const struct step* s = &t->first[i];
    free(blocks[s->slot]);
    blocks[s->slot] = malloc(s->size);
    blocks[s->slot][0] = 1;
  }
  return NULL;
}

/* The measured steps; out of line so callgrind can collect it alone. */
__attribute__((noinline)) static void run(const char* name, int n) {
  if (strcmp(name, "random-working-set") == 0) {
    for (int i = 0; i < n; i++) {
      free(blocks[steps[i].slot]);
      blocks[steps[i].slot] = malloc(steps[i].size);
      blocks[steps[i].slot][0] = 1;
    }
  } else if (strcmp(name, "leak-loop") == 0) {
    for (int done = 0, round = 0; done < n; round++) {
      int count = n - done < leak_block_count ? n - done : leak_block_count;
      for (int i = 0; i < count; i++) {
        blocks[i] = malloc(steps[i].size);
        blocks[i][0] = 1;
      }
      for (int i = 0; i < count; i++) {
        if (i % 50 == round % 50 && leaked_count < (1 << 20))
          leaked[leaked_count++] = blocks[i];
        else
          free(blocks[i]);
      }
      done += count;
    }
  } else {
    int per_thread = n / handoff_threads;
    for (int g = 0; g < handoff_threads; g++) {
      struct turn t = {steps + g * per_thread, per_thread};
      pthread_t thread;
      pthread_create(&thread, NULL, handoff_turn, &t);
      pthread_join(thread, NULL);
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const char* name = argv[1];
  int n = atoi(argv[2]);
  steps = calloc((size_t)n + leak_block_count, sizeof *steps);
  if (strcmp(name, "random-working-set") == 0) {
    for (int i = 0; i < working_set; i++)
      blocks[i] = malloc(8 + (size_t)(pow(next_unit(), 8) * 40960.0));
    draw_working_set(n);
  } else if (strcmp(name, "leak-loop") == 0) {
    draw_leak();
  } else if (strcmp(name, "server-handoff") == 0) {
    for (int i = 0; i < handoff_blocks; i++) blocks[i] = malloc(10 + next_random() % 991);
    draw_handoff(n);
  } else {
    return 2;
  }
  run(name, n);
  return 0;
}
