/* A malloc+free loop for instruction counting: `pair SIZE N [usable|aligned]`
   runs N pairs in run(); with `usable`, each pair also asks malloc_usable_size,
   as programs that count their memory do (redis, on every malloc and free);
   with `aligned`, run_aligned() takes each block from posix_memalign at 64
   bytes instead. */
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

/* The same with posix_memalign. */
__attribute__((noinline)) static size_t run_aligned(size_t size, int n) {
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    void* p;
    if (posix_memalign(&p, 64, size) != 0) abort();
    total += (size_t)p & 1;
    free(p);
  }
  return total;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return 2;
  size_t size = (size_t)atol(argv[1]);
  int n = atoi(argv[2]);
  int usable = argc == 4 && strcmp(argv[3], "usable") == 0;
  /* Warm up first (the first pairs set the thread up); the total keeps the calls. */
  if (argc == 4 && strcmp(argv[3], "aligned") == 0) {
    run_aligned(size, 1000);
    return run_aligned(size, n) == 1;
  }
  run(size, 1000, usable);
  return run(size, n, usable) == 1;
}
