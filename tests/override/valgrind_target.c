// A program with two planted bugs for memcheck to find in strata's heap (debug
// mode under Valgrind): a block never freed, and a read of a freed block.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A block that starts a page, kept: the page's own record of where its
// blocks start points at it, so memcheck would count it as reachable.
static char* page_start;

// Kept only in a local of a frame that is gone (never inlined into main,
// whose frame memcheck scans): memcheck reports it "definitely lost".
__attribute__((noinline)) static void leak(void) {
  char* lost = malloc(4000);
  if (((unsigned long)lost & 0xffff) == 0) {
    page_start = lost;
    lost = malloc(4000);
  }
  memset(lost, 1, 4000);
  printf("leaked %p\n", (void*)lost);
}

int main(void) {
  leak();
  char* freed = malloc(100);
  memset(freed, 2, 100);
  char* volatile alias =
      freed;  // opaque: the compiler does not see the read below as one of `freed`
  free(freed);
  volatile char after = alias[10];  // use after free
  printf("read %d\n", after);
  return 0;
}
