/* A malloc+free loop for instruction counting: `pair SIZE N` runs N pairs in run(). */
#include <stdlib.h>

/* The measured loop; out of line so callgrind can collect it alone. */
__attribute__((noinline)) static void run(size_t size, int n) {
  for (int i = 0; i < n; i++) {
    void* volatile p = malloc(size);
    free(p);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  size_t size = (size_t)atol(argv[1]);
  run(size, 1000); /* warm: the first pairs set the thread up */
  run(size, atoi(argv[2]));
  return 0;
}
