// The C allocation API with its documented edge cases: zero sizes, overflowing sizes
// (NULL + ENOMEM), bad alignments (EINVAL), content kept across realloc, zeroed calloc,
// usable sizes, and memory that libc functions allocate for the caller to free.
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

// Sizes no allocator can satisfy; volatile so the compiler cannot see them as constants.
static volatile size_t huge_size = SIZE_MAX;
static volatile size_t half_huge_size = SIZE_MAX / 2 + 2;
static volatile size_t over_ptrdiff_size = (size_t)PTRDIFF_MAX + 1;
// A strndup bound larger than its string, opaque so the compiler does not warn.
static volatile size_t generous_bound = 100;
// An alignment that is not a power of two, opaque for the same reason.
static volatile size_t odd_alignment = 48;

static size_t resident_kib(void);

static int is_aligned(const void* pointer, size_t alignment) {
  return ((uintptr_t)pointer & (alignment - 1)) == 0;
}

// Fills `size` bytes with a pattern derived from `seed`.
static void fill_pattern(unsigned char* bytes, size_t size, unsigned seed) {
  for (size_t i = 0; i < size; ++i) bytes[i] = (unsigned char)(i * 31 + seed);
}

// Whether `size` bytes still hold the pattern of fill_pattern.
static int has_pattern(const unsigned char* bytes, size_t size, unsigned seed) {
  for (size_t i = 0; i < size; ++i) {
    if (bytes[i] != (unsigned char)(i * 31 + seed)) return 0;
  }
  return 1;
}

// malloc: zero size, overflow, usable size, and freeing NULL.
static void check_malloc(void) {
  void* empty = malloc(0);
  void* other_empty = malloc(0);
  CHECK(empty != NULL && other_empty != NULL, "malloc(0) returned NULL");
  CHECK(empty != other_empty, "two malloc(0) calls returned the same pointer");
  free(empty);
  free(other_empty);
  free(NULL);

  errno = 0;
  CHECK(malloc(huge_size) == NULL, "malloc(SIZE_MAX) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "malloc(SIZE_MAX) set errno %d", errno);
  errno = 0;
  CHECK(malloc(over_ptrdiff_size) == NULL, "malloc(PTRDIFF_MAX+1) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "malloc(PTRDIFF_MAX+1) set errno %d", errno);

  static const size_t sizes[] = {1, 7, 8, 16, 24, 100, 1000, 4096, 65536, 1 << 20, 16 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    unsigned char* block = malloc(sizes[i]);
    CHECK(block != NULL, "malloc(%zu)", sizes[i]);
    CHECK(is_aligned(block, 16) || sizes[i] < 16, "malloc(%zu) not 16-aligned", sizes[i]);
    size_t usable = malloc_usable_size(block);
    CHECK(usable >= sizes[i], "usable size %zu < %zu", usable, sizes[i]);
    memset(block, 0x5a, usable);  // the whole usable size is ours to write
    free(block);
  }
  CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) != 0");
}

// calloc: zeroed memory even when it reuses dirty blocks, and overflow of count * size.
static void check_calloc(void) {
  static const size_t sizes[] = {8, 48, 512, 3000, 40000, 300000, 5 << 20, 20 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    for (int round = 0; round < 4; ++round) {
      unsigned char* dirty = malloc(sizes[i]);
      CHECK(dirty != NULL, "malloc(%zu)", sizes[i]);
      memset(dirty, 0xab, sizes[i]);
      free(dirty);
      unsigned char* zeroed = calloc(1, sizes[i]);
      CHECK(zeroed != NULL, "calloc(1, %zu)", sizes[i]);
      for (size_t j = 0; j < sizes[i]; ++j) {
        CHECK(zeroed[j] == 0, "calloc(1, %zu) byte %zu is %d", sizes[i], j, zeroed[j]);
      }
      free(zeroed);
    }
  }
  void* empty = calloc(0, 0);
  CHECK(empty != NULL, "calloc(0, 0) returned NULL");
  free(empty);
  errno = 0;
  CHECK(calloc(half_huge_size, 2) == NULL, "calloc(SIZE_MAX/2+2, 2) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "calloc overflow set errno %d", errno);
  errno = 0;
  CHECK(calloc(2, half_huge_size) == NULL, "calloc(2, SIZE_MAX/2+2) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "calloc overflow set errno %d", errno);
  errno = 0;
  CHECK(calloc(1, huge_size) == NULL, "calloc(1, SIZE_MAX) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "calloc(1, SIZE_MAX) set errno %d", errno);

  // Memory fresh from the OS reads as zeros: a large calloc must not write it.
  size_t before = resident_kib();
  unsigned char* large = calloc(1, 1u << 30);
  CHECK(large != NULL, "calloc(1, 1 GiB)");
  for (size_t j = 0; j < (1u << 30); j += 64u << 20) CHECK(large[j] == 0, "calloc byte %zu", j);
  size_t grown = resident_kib() - before;
  CHECK(grown < 64 * 1024, "calloc(1, 1 GiB) made %zu KiB resident", grown);
  free(large);
}

// Resident memory of this process in KiB, from /proc/self/status.
static size_t resident_kib(void) {
  FILE* status = fopen("/proc/self/status", "r");
  char line[128];
  size_t kib = 0;
  while (status != NULL && fgets(line, sizeof line, status) != NULL) {
    if (sscanf(line, "VmRSS: %zu kB", &kib) == 1) break;
  }
  if (status != NULL) fclose(status);
  return kib;
}

// realloc and reallocarray: content kept across every size class, NULL and zero sizes,
// and failures that leave the original block untouched.
static void check_realloc(void) {
  static const size_t sizes[] = {1,      16,      100,      1000,   5000, 70000,
                                 600000, 3 << 20, 20 << 20, 200000, 900,  10};
  unsigned char* block = realloc(NULL, 5);
  CHECK(block != NULL, "realloc(NULL, 5)");
  fill_pattern(block, 5, 1);
  size_t kept = 5;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    block = realloc(block, sizes[i]);
    CHECK(block != NULL, "realloc to %zu", sizes[i]);
    size_t common = kept < sizes[i] ? kept : sizes[i];
    CHECK(has_pattern(block, common, 1), "realloc to %zu lost content", sizes[i]);
    fill_pattern(block, sizes[i], 1);
    kept = sizes[i];
  }

  // A huge block asked to grow beyond any machine fails and stays as it was.
  unsigned char* large = malloc(20 << 20);
  CHECK(large != NULL, "malloc(20 MiB)");
  fill_pattern(large, 20 << 20, 3);
  errno = 0;
  CHECK(realloc(large, huge_size) == NULL, "realloc(huge block, SIZE_MAX) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "realloc(huge block, SIZE_MAX) set errno %d", errno);
  CHECK(has_pattern(large, 20 << 20, 3), "failed realloc changed the huge block");
  free(large);
  errno = 0;
  CHECK(malloc((size_t)1 << 46) == NULL, "malloc(64 TiB) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "malloc(64 TiB) set errno %d", errno);

  errno = 0;
  CHECK(realloc(block, huge_size) == NULL, "realloc(p, SIZE_MAX) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "realloc(p, SIZE_MAX) set errno %d", errno);
  CHECK(has_pattern(block, kept, 1), "failed realloc changed the block");
  errno = 0;
  CHECK(reallocarray(block, half_huge_size, 2) == NULL, "reallocarray overflow succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "reallocarray overflow set errno %d", errno);
  CHECK(has_pattern(block, kept, 1), "failed reallocarray changed the block");
  block = reallocarray(block, 100, 8);
  CHECK(block != NULL && has_pattern(block, 10, 1), "reallocarray(p, 100, 8)");

  // realloc(p, 0): glibc frees p and returns NULL; POSIX also allows a new minimal block.
  void* after_zero = realloc(block, 0);
  EXPECT_GLIBC(after_zero == NULL, "realloc(p, 0) returned a block; glibc frees p, returns NULL");
  free(after_zero);
}

// posix_memalign, aligned_alloc, memalign, valloc and pvalloc: alignment kept, bad
// alignments refused with EINVAL, impossible sizes refused with ENOMEM.
static void check_aligned(void) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t alignment = sizeof(void*); alignment <= (8u << 20); alignment *= 2) {
    static const size_t sizes[] = {0, 1, 24, 4096, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
      void* block = (void*)1;
      CHECK(posix_memalign(&block, alignment, sizes[i]) == 0, "posix_memalign(%zu)", alignment);
      CHECK(is_aligned(block, alignment), "posix_memalign(%zu, %zu)", alignment, sizes[i]);
      memset(block, 1, sizes[i]);
      free(block);
      if (sizes[i] % alignment == 0 && sizes[i] != 0) {
        block = aligned_alloc(alignment, sizes[i]);
        CHECK(block != NULL && is_aligned(block, alignment), "aligned_alloc(%zu)", alignment);
        free(block);
      }
      block = memalign(alignment, sizes[i]);
      CHECK(block != NULL && is_aligned(block, alignment), "memalign(%zu, %zu) = %p", alignment,
            sizes[i], block);
      CHECK(malloc_usable_size(block) >= sizes[i], "memalign usable size");
      free(block);
    }
  }

  // Alignments of 32 and 64 MiB, as glibc serves them.
  for (size_t alignment = (size_t)32 << 20; alignment <= ((size_t)64 << 20); alignment *= 2) {
    void* block = NULL;
    CHECK(posix_memalign(&block, alignment, 100) == 0 && is_aligned(block, alignment),
          "posix_memalign(%zu, 100) = %p", alignment, block);
    free(block);
    block = aligned_alloc(alignment, alignment);
    CHECK(block != NULL && is_aligned(block, alignment), "aligned_alloc(%zu) = %p", alignment,
          block);
    free(block);
    block = memalign(alignment, 5000);
    CHECK(block != NULL && is_aligned(block, alignment), "memalign(%zu) = %p", alignment, block);
    CHECK(malloc_usable_size(block) >= 5000, "memalign(%zu) usable size", alignment);
    free(block);
  }

  void* untouched = (void*)0x1234;
  CHECK(posix_memalign(&untouched, 24, 64) == EINVAL, "posix_memalign(24) must be EINVAL");
  CHECK(posix_memalign(&untouched, 4, 64) == EINVAL, "posix_memalign(4) must be EINVAL");
  CHECK(posix_memalign(&untouched, 0, 64) == EINVAL, "posix_memalign(0) must be EINVAL");
  CHECK(posix_memalign(&untouched, 64, huge_size) == ENOMEM, "posix_memalign(SIZE_MAX)");
  EXPECT_GLIBC(untouched == (void*)0x1234, "failed posix_memalign changed *memptr");
  errno = 0;
  CHECK(aligned_alloc(64, huge_size - 63) == NULL, "aligned_alloc(64, SIZE_MAX-63) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "aligned_alloc overflow set errno %d", errno);
  errno = 0;
  CHECK(memalign(64, huge_size) == NULL, "memalign(64, SIZE_MAX) succeeded");
  EXPECT_GLIBC(errno == ENOMEM, "memalign(64, SIZE_MAX) set errno %d", errno);
  // An alignment with no power of two above it is refused.
  errno = 0;
  CHECK(memalign(huge_size, 16) == NULL, "memalign(SIZE_MAX, 16) succeeded");
  EXPECT_GLIBC(errno == EINVAL, "memalign(SIZE_MAX, 16) set errno %d", errno);
  errno = 0;
  CHECK(memalign(((size_t)1 << 63) + 2, 16) == NULL, "memalign(2^63 + 2, 16) succeeded");
  EXPECT_GLIBC(errno == EINVAL, "memalign(2^63 + 2, 16) set errno %d", errno);
  // glibc rounds a non-power-of-two memalign alignment up to the next power of two.
  void* rounded = memalign(odd_alignment, 100);
  EXPECT_GLIBC(rounded != NULL && is_aligned(rounded, 64), "memalign(48, 100) = %p", rounded);
  free(rounded);

  void* paged = valloc(10);
  CHECK(paged != NULL && is_aligned(paged, page), "valloc not page-aligned");
  free(paged);
  paged = pvalloc(page + 1);
  CHECK(paged != NULL && is_aligned(paged, page), "pvalloc not page-aligned");
  CHECK(malloc_usable_size(paged) >= 2 * page, "pvalloc did not round up to whole pages");
  memset(paged, 3, 2 * page);
  free(paged);
  paged = pvalloc(0);
  CHECK(paged != NULL && is_aligned(paged, page), "pvalloc(0)");
  free(paged);
}

// Memory that libc allocates on the caller's behalf must be freeable by free().
static void check_libc_allocations(void) {
  char* copy = strdup("strata override");
  CHECK(copy != NULL && strcmp(copy, "strata override") == 0, "strdup");
  free(copy);
  copy = strndup("strata override", 6);
  CHECK(copy != NULL && strcmp(copy, "strata") == 0, "strndup truncates and terminates");
  free(copy);
  copy = strndup("ab", generous_bound);
  CHECK(copy != NULL && strcmp(copy, "ab") == 0, "strndup of a short string");
  free(copy);

  char* printed = NULL;
  CHECK(asprintf(&printed, "%d-%s", 42, "x") == 4 && strcmp(printed, "42-x") == 0, "asprintf");
  free(printed);
  char* resolved = realpath("/", NULL);
  CHECK(resolved != NULL && strcmp(resolved, "/") == 0, "realpath(\"/\", NULL)");
  free(resolved);

  char* buffer = NULL;
  size_t capacity = 0;
  FILE* stream = open_memstream(&buffer, &capacity);
  CHECK(stream != NULL, "open_memstream");
  for (int i = 0; i < 10000; ++i) fprintf(stream, "line %d\n", i);
  fclose(stream);
  CHECK(capacity > 60000 && strncmp(buffer, "line 0\n", 7) == 0, "open_memstream content");
  FILE* lines = fmemopen(buffer, capacity, "r");
  char* line = NULL;
  size_t line_capacity = 0;
  int count = 0;
  while (getline(&line, &line_capacity, lines) > 0) ++count;
  CHECK(count == 10000, "getline read %d lines", count);
  free(line);
  fclose(lines);
  free(buffer);
}

// malloc_trim and mallinfo2 answer without harm, and mallinfo2 sees memory in use grow
// while 64 MiB is allocated.
static void check_statistics(void) {
  enum { block_count = 1024, block_size = 64 << 10 };
  static void* blocks[block_count];
  struct mallinfo2 before = mallinfo2();
  for (int i = 0; i < block_count; ++i) {
    blocks[i] = malloc(block_size);
    CHECK(blocks[i] != NULL, "malloc(64 KiB)");
    memset(blocks[i], i, block_size);
  }
  struct mallinfo2 during = mallinfo2();
  for (int i = 0; i < block_count; ++i) free(blocks[i]);
  int trimmed = malloc_trim(0);
  CHECK(trimmed == 0 || trimmed == 1, "malloc_trim returned %d", trimmed);
  size_t in_use_before = before.uordblks + before.hblkhd;
  size_t in_use_during = during.uordblks + during.hblkhd;
  EXPECT_GLIBC(in_use_during >= in_use_before + (size_t)block_count * block_size,
               "mallinfo2 in use went from %zu to %zu bytes with 64 MiB allocated", in_use_before,
               in_use_during);
}

// free() keeps errno, as POSIX.1-2024 requires and glibc does.
static void check_free_keeps_errno(void) {
  void* block = malloc(100);
  void* big = malloc(8 << 20);
  errno = EILSEQ;
  free(block);
  free(big);
  EXPECT_GLIBC(errno == EILSEQ, "free changed errno to %d", errno);
}

int main(void) {
  check_malloc();
  check_calloc();
  check_realloc();
  check_aligned();
  check_libc_allocations();
  check_statistics();
  check_free_keeps_errno();
  puts("api edges ok");
  return 0;
}
