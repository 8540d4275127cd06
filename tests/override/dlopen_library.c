// A library that dlopen_threads loads and unloads repeatedly. It allocates blocks the
// program frees, frees blocks the program allocated, uses dynamic TLS (which the loader
// allocates per thread with malloc), and frees its own leftovers when unloaded.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// Large enough that every thread touching it gets a dynamically allocated TLS block.
static __thread char thread_scratch[8192];
// Blocks kept across calls, shared by all threads: one thread frees another's blocks.
static void* kept_until_unload[32];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

// Stores `block` in `slot` and returns the block that was there.
static void* swap_kept(int slot, void* block) {
  pthread_mutex_lock(&kept_lock);
  void* previous = kept_until_unload[slot];
  kept_until_unload[slot] = block;
  pthread_mutex_unlock(&kept_lock);
  return previous;
}

// Returns a fresh copy of `text` repeated `times` times; the caller frees it.
char* library_repeat(const char* text, int times) {
  size_t length = strlen(text);
  char* result = malloc(length * (size_t)times + 1);
  if (result == NULL) return NULL;
  for (int i = 0; i < times; ++i) memcpy(result + length * (size_t)i, text, length);
  result[length * (size_t)times] = '\0';
  return result;
}

// Frees a block the caller allocated, after checking its first byte.
int library_release(void* block, unsigned char expected_first_byte) {
  int intact = *(unsigned char*)block == expected_first_byte;
  free(block);
  return intact;
}

// Allocation churn inside the library; touches this thread's TLS block.
unsigned library_churn(int iterations) {
  unsigned sum = 0;
  for (int i = 0; i < iterations; ++i) {
    size_t size = 1 + (size_t)(i * 131) % 9000;
    unsigned char* block = malloc(size);
    if (block == NULL) return 0;
    block[size - 1] = (unsigned char)i;
    thread_scratch[i % sizeof thread_scratch] += (char)block[size - 1];
    sum += block[size - 1];
    free(swap_kept(i % 32, i % 3 == 0 ? realloc(block, size * 2) : block));
  }
  return sum;
}

// Runs at dlclose: frees what the library still holds.
__attribute__((destructor)) static void release_at_unload(void) {
  for (int i = 0; i < 32; ++i) free(kept_until_unload[i]);
}
