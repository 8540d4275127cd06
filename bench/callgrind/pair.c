/* A malloc+free loop for instruction counting: `pair SIZE N [usable]` runs N
   pairs in run(); with `usable`, each pair also asks malloc_usable_size, as
   programs that count their memory do (redis, on every malloc and free). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* The measured loop; out of line so callgrind can collect it alone. */
__attribute__((noinline)) static size_t run(size_t size, int n, int usable) {
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    void* volatile p = malloc(size);
    if (usable) total += malloc_usable_size(p);
    free(p);
  }
  return total;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return 2;
  size_t size = (size_t)atol(argv[1]);
  int usable = argc == 4 && strcmp(argv[3], "usable") == 0;
  /* Warm up first (the first pairs set the thread up); the total keeps the calls. */
  run(size, 1000, usable);
  return run(size, atoi(argv[2]), usable) == 1;
}
