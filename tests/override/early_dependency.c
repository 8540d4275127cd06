// A shared library the early_init program links against: its constructor allocates
// while the program's own constructors have not run yet, and hands the block over.
#include <stdlib.h>
#include <string.h>

static char* constructor_block;

// Runs when the library is loaded, before main and before the program's constructors.
__attribute__((constructor(101))) static void allocate_at_load(void) {
  constructor_block = malloc(4000);
  if (constructor_block != NULL) strcpy(constructor_block, "allocated in a library constructor");
  void* scratch = calloc(100, 100);
  free(scratch);
}

// Gives the block to the caller, who frees it.
char* early_dependency_take_block(void) {
  char* block = constructor_block;
  constructor_block = NULL;
  return block;
}
