/* A program that allocates a few KiB, as most short-lived tools do: 48 blocks of
 * 16 B to 1.5 KiB in as many size classes, every other one freed, then a
 * checksum of the rest. bench/programs/run.sh compares the peak RSS each
 * allocator adds to a process like this (make_inputs.sh builds it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { blocks = 48 };

int main(void) {
  unsigned char* block[blocks];
  for (int i = 0; i < blocks; i++) {
    size_t size = 16 + (size_t)i * 32;
    block[i] = malloc(size);
    if (block[i] == NULL) return 1;
    memset(block[i], i, size);
  }
  for (int i = 0; i < blocks; i += 2) free(block[i]);
  unsigned long sum = 0;
  for (int i = 1; i < blocks; i += 2) sum += block[i][i];
  printf("checksum %lu\n", sum);
  return 0;
}
