// Allocation before the C runtime is fully set up: from .preinit_array (before any
// constructor), from a priority-101 constructor that also starts a thread, and from the
// constructor of a linked shared library. Main checks and frees every block.
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

char* early_dependency_take_block(void);

enum { early_block_count = 64 };
static void* preinit_blocks[early_block_count];
static void* constructor_blocks[early_block_count];
static void* thread_block;

// Allocates blocks of growing size with every C entry point, each filled with `tag`.
static void allocate_blocks(void** blocks, unsigned char tag) {
  for (int i = 0; i < early_block_count; ++i) {
    size_t size = (size_t)16 << (i % 16);
    switch (i % 4) {
      case 0:
        blocks[i] = malloc(size);
        break;
      case 1:
        blocks[i] = calloc(1, size);
        break;
      case 2:
        blocks[i] = realloc(malloc(8), size);
        break;
      default:
        if (posix_memalign(&blocks[i], 64, size) != 0) blocks[i] = NULL;
        break;
    }
    if (blocks[i] != NULL) memset(blocks[i], tag, size);
  }
  void* transient = malloc(100);
  free(transient);
}

// Checks the blocks still hold `tag`, then frees them.
static void check_and_free_blocks(void** blocks, unsigned char tag, const char* origin) {
  for (int i = 0; i < early_block_count; ++i) {
    size_t size = (size_t)16 << (i % 16);
    const unsigned char* bytes = blocks[i];
    CHECK(bytes != NULL, "%s block %d was not allocated", origin, i);
    CHECK(bytes[0] == tag && bytes[size - 1] == tag, "%s block %d was overwritten", origin, i);
    CHECK(malloc_usable_size(blocks[i]) >= size, "%s block %d usable size", origin, i);
    free(blocks[i]);
  }
}

// Runs from .preinit_array: after the loader, before every constructor.
static void allocate_in_preinit(int argc, char** argv, char** envp) {
  (void)argc, (void)argv, (void)envp;
  allocate_blocks(preinit_blocks, 0x11);
}
__attribute__((section(".preinit_array"),
               used)) static void (*const preinit_entry)(int, char**, char**) = allocate_in_preinit;

// A thread started from a constructor allocates on its own heap.
static void* allocate_in_thread(void* unused) {
  (void)unused;
  thread_block = malloc(777);
  if (thread_block != NULL) memset(thread_block, 0x33, 777);
  return NULL;
}

// The earliest ordinary constructor: allocates and runs a thread before main.
__attribute__((constructor(101))) static void allocate_in_constructor(void) {
  allocate_blocks(constructor_blocks, 0x22);
  pthread_t thread;
  if (pthread_create(&thread, NULL, allocate_in_thread, NULL) == 0) pthread_join(thread, NULL);
}

int main(void) {
  check_and_free_blocks(preinit_blocks, 0x11, "preinit");
  check_and_free_blocks(constructor_blocks, 0x22, "constructor");
  const unsigned char* from_thread = thread_block;
  CHECK(from_thread != NULL && from_thread[776] == 0x33, "constructor thread block");
  free(thread_block);
  char* from_library = early_dependency_take_block();
  CHECK(from_library != NULL && strcmp(from_library, "allocated in a library constructor") == 0,
        "library constructor block");
  free(from_library);
  puts("early init ok");
  return 0;
}
