/* malloc under an address-space limit (as `ulimit -v` sets) in a program run
 * with the allocator preloaded: 16-byte blocks until malloc says no, which must
 * be NULL + ENOMEM after most of the headroom was served; then everything freed
 * and served again. Exits 0 on success, 1 with a line saying what failed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MIB ((size_t)1 << 20)
#define HEADROOM (64 * MIB)

struct chained_block {
  struct chained_block* next;
  uintptr_t tag;
};

/* VmSize of this process in bytes. */
static size_t mapped_bytes(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kib = 0;
  if (f == NULL) return 0;
  while (fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "VmSize:", 7) == 0 && sscanf(line + 7, "%zu", &kib) == 1) break;
  fclose(f);
  return kib * 1024;
}

/* Allocate until refused (or `most` blocks); the chain lives in the blocks. */
static size_t allocate(struct chained_block** chain, size_t most, int* error) {
  size_t served = 0;
  *error = 0;
  while (served < most) {
    struct chained_block* b;
    errno = 0;
    b = malloc(sizeof(*b));
    if (b == NULL) {
      *error = errno;
      break;
    }
    b->next = *chain;
    b->tag = (uintptr_t)b ^ 0x5a5a5a5a;
    *chain = b;
    ++served;
  }
  return served;
}

/* Free a chain; the number of blocks whose contents changed. */
static size_t release(struct chained_block* chain) {
  size_t damaged = 0;
  while (chain != NULL) {
    struct chained_block* next = chain->next;
    if (chain->tag != ((uintptr_t)chain ^ 0x5a5a5a5a)) ++damaged;
    free(chain);
    chain = next;
  }
  return damaged;
}

int main(void) {
  const char* preload = getenv("LD_PRELOAD");
  /* strata serves 16-byte blocks at 16 bytes each; glibc's 32-byte chunks
   * serve at most half the headroom as requested bytes. */
  size_t share = preload != NULL && strstr(preload, "strata") != NULL ? 60 : 40;
  struct rlimit limit;
  struct chained_block* chain = NULL;
  int error;
  size_t served, again;
  free(malloc(16)); /* the allocator is set up before the limit */
  if (getrlimit(RLIMIT_AS, &limit) != 0) return 1;
  limit.rlim_cur = mapped_bytes() + HEADROOM;
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 1;
  served = allocate(&chain, SIZE_MAX, &error);
  if (error != ENOMEM) {
    printf("FAIL: malloc returned NULL with errno %d, not ENOMEM\n", error);
    return 1;
  }
  if (served * sizeof(struct chained_block) < HEADROOM / 100 * share) {
    printf("FAIL: %zu MiB served in a headroom of %zu MiB\n", served * 16 / MIB, HEADROOM / MIB);
    return 1;
  }
  if (release(chain) != 0) {
    printf("FAIL: blocks changed while the heap was exhausted\n");
    return 1;
  }
  chain = NULL;
  again = allocate(&chain, served, &error);
  if (again != served || release(chain) != 0) {
    printf("FAIL: %zu blocks served again after freeing, of %zu\n", again, served);
    return 1;
  }
  printf("%zu MiB of 16-byte blocks in a headroom of %zu MiB, then ENOMEM\n", served * 16 / MIB,
         HEADROOM / MIB);
  return 0;
}
