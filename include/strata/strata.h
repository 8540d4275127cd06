/* strata: the C API.
 *
 * Errors follow POSIX: a failed allocation returns NULL and sets errno to
 * ENOMEM (no memory, or a size that overflows) or EINVAL (an alignment that is
 * not a power of two). Detected heap corruption (double free, foreign pointer)
 * prints one line naming what and where, then aborts.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#define STRATA_NOEXCEPT noexcept
#else
#define STRATA_NOEXCEPT
#endif

#define STRATA_EXPORT __attribute__((visibility("default")))
#define STRATA_MALLOC_LIKE __attribute__((malloc, warn_unused_result))

/* ---- allocation --------------------------------------------------------- */

STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_malloc(size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_calloc(size_t count, size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT void* strata_realloc(void* p, size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT void strata_free(void* p) STRATA_NOEXCEPT;
/* Free with the size given at allocation (or anything up to usable size). */
STRATA_EXPORT void strata_free_sized(void* p, size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_malloc_aligned(size_t size,
                                                             size_t alignment) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_aligned_alloc(size_t alignment,
                                                            size_t size) STRATA_NOEXCEPT;
/* Returns 0, EINVAL or ENOMEM as posix_memalign does; errno is left alone. */
STRATA_EXPORT int strata_posix_memalign(void** out, size_t alignment, size_t size) STRATA_NOEXCEPT;
/* Bytes of p's block the caller may use: its size class's for a heap block, the
 * request rounded up to 16 (at least 16) for one guarded sampling or the
 * profiler placed, so blocks of one size may differ. */
STRATA_EXPORT size_t strata_usable_size(const void* p) STRATA_NOEXCEPT;
/* Grow or shrink the block in place; returns p, or NULL (errno untouched) if it cannot. */
STRATA_EXPORT void* strata_expand(void* p, size_t size) STRATA_NOEXCEPT;

/* Allocate `count` separate blocks of `size` bytes into out[]; returns how many
 * were allocated (count, or fewer when memory ran out: errno is then ENOMEM). */
STRATA_EXPORT size_t strata_malloc_batch(size_t size, size_t count, void** out) STRATA_NOEXCEPT;
STRATA_EXPORT void strata_free_batch(void** blocks, size_t count) STRATA_NOEXCEPT;

/* ---- first-class heaps -------------------------------------------------- */

/* A heap belongs to the thread that created it: only that thread allocates from
 * it; any thread may free its blocks. A handle that names no live heap (destroyed,
 * deleted, of a thread that exited, or never a handle) and a call from another
 * thread print one line and abort; allocating from a NULL heap returns NULL with
 * errno EINVAL (docs/misuse.md has every answer). */
typedef struct strata_heap_s strata_heap_t;

STRATA_EXPORT strata_heap_t* strata_heap_new(void) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_heap_malloc(strata_heap_t* heap,
                                                          size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_heap_calloc(strata_heap_t* heap, size_t count,
                                                          size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT void* strata_heap_realloc(strata_heap_t* heap, void* p, size_t size) STRATA_NOEXCEPT;
STRATA_EXPORT STRATA_MALLOC_LIKE void* strata_heap_malloc_aligned(strata_heap_t* heap, size_t size,
                                                                  size_t alignment) STRATA_NOEXCEPT;
/* Free every block of the heap at once, then the heap. Blocks of the heap must
 * not be in use, nor be freed afterwards, by any thread. */
STRATA_EXPORT void strata_heap_destroy(strata_heap_t* heap) STRATA_NOEXCEPT;
/* Delete the heap; its live blocks move to the calling thread's default heap. */
STRATA_EXPORT void strata_heap_delete(strata_heap_t* heap) STRATA_NOEXCEPT;
/* The calling thread's default heap. */
STRATA_EXPORT strata_heap_t* strata_heap_default(void) STRATA_NOEXCEPT;
/* Call visit(block, usable_size, arg) for each live block; stop when it returns 0. */
typedef int (*strata_block_visitor)(void* block, size_t usable_size, void* arg);
STRATA_EXPORT void strata_heap_visit(strata_heap_t* heap, strata_block_visitor visit,
                                     void* arg) STRATA_NOEXCEPT;

/* Return what can be returned: cached pages and segments, pending frees of this
 * thread; with force, purge everything unused now instead of after the delay. */
STRATA_EXPORT void strata_collect(int force) STRATA_NOEXCEPT;
/* Validate every page of `heap` (NULL: the calling thread's default heap):
 * free lists, counts, free marks, and in debug mode the fill of free blocks
 * and the canary after each live block. Returns 1; detected corruption prints
 * one "strata: heap corruption: ..." line and aborts. The owning thread only. */
STRATA_EXPORT int strata_heap_check(strata_heap_t* heap) STRATA_NOEXCEPT;

/* ---- statistics --------------------------------------------------------- */

#define STRATA_SIZE_CLASSES 100

typedef struct strata_stats_s {
  size_t in_use; /* bytes in live blocks (by size class) */
  size_t peak_in_use;
  size_t committed; /* bytes the allocator holds backed or backable by memory */
  size_t peak_committed;
  size_t reserved;    /* address space mapped */
  size_t purged;      /* bytes given back to the OS, cumulative */
  size_t huge_in_use; /* of in_use, blocks above the largest size class */
  uint64_t mallocs;   /* allocations, cumulative */
  uint64_t frees;
  uint64_t class_mallocs[STRATA_SIZE_CLASSES];
  uint64_t class_frees[STRATA_SIZE_CLASSES];
  uint64_t pages;           /* pages holding blocks now */
  uint64_t segments;        /* segments mapped now */
  uint64_t segments_cached; /* empty segments kept for reuse */
  uint64_t cross_thread_frees;
  uint64_t os_calls;
  uint64_t threads; /* threads that have allocated and not exited */
} strata_stats_t;

/* Fill *out; a null out is ignored, with errno EINVAL. */
STRATA_EXPORT void strata_stats_get(strata_stats_t* out) STRATA_NOEXCEPT;
/* Human-readable text, or JSON when json != 0. */
STRATA_EXPORT void strata_stats_print(FILE* out, int json) STRATA_NOEXCEPT;
/* Block size of size class `cls` (0 when out of range). */
STRATA_EXPORT size_t strata_size_class_size(size_t cls) STRATA_NOEXCEPT;

/* ---- the memory ledger (strata/ledger.hpp) -------------------------------- */

/* Every live strata resource (pools, arenas, bfc, buddy; the GPU layer's pools
 * and caching allocator), the heap, and each device they use, in one account. */
typedef struct strata_ledger_totals_s {
  size_t resources; /* live resources */
  size_t heap_in_use;
  size_t heap_committed;
  size_t host_held; /* held from their upstreams by the resources that are no other's child */
  size_t device_held;
  size_t managed_held;
  size_t pinned_held;
  size_t device_total; /* the devices' memory as they report it, summed */
  size_t device_free;
  size_t device_outside; /* used on those devices, not by strata */
} strata_ledger_totals_t;

enum { STRATA_LEDGER_TEXT = 0, STRATA_LEDGER_JSON = 1, STRATA_LEDGER_HTML = 2 };

/* Fill *out: 0, or -1 with errno EINVAL for a null out. */
STRATA_EXPORT int strata_ledger_totals(strata_ledger_totals_t* out) STRATA_NOEXCEPT;
/* The ledger in `format` into buffer (at most capacity bytes, NUL included);
 * returns its length without the NUL, so a call with capacity 0 sizes it.
 * 0 with errno EINVAL for an unknown format or a null buffer with capacity. */
STRATA_EXPORT size_t strata_ledger_write(int format, char* buffer, size_t capacity) STRATA_NOEXCEPT;
/* The ledger in `format` to out (stderr when null): 0, or -1 (EINVAL: unknown format). */
STRATA_EXPORT int strata_ledger_print(FILE* out, int format) STRATA_NOEXCEPT;

/* ---- options ------------------------------------------------------------ */

/* Each option is read once from its STRATA_<NAME> environment variable; a value
 * it does not accept prints one warning naming the variable and what it accepts,
 * and the default stays. Flags take 0/1, true/false, yes/no or on/off; numbers
 * a decimal value in the option's range (sizes with a K, M, G or T suffix). */
typedef enum strata_option_e {
  STRATA_OPTION_VERBOSE,         /* print the options in force at start-up */
  STRATA_OPTION_SHOW_STATS,      /* print statistics at exit */
  STRATA_OPTION_SHOW_ERRORS,     /* print a line for each error returned */
  STRATA_OPTION_PURGE_DELAY_MS,  /* delay before unused memory goes back to the OS; -1 never */
  STRATA_OPTION_PURGE_DECOMMITS, /* purge with MADV_DONTNEED (1) or MADV_FREE (0) */
  STRATA_OPTION_LARGE_OS_PAGES,  /* back segments with transparent huge pages */
  STRATA_OPTION_SECURE,          /* guard pages and free-list checks */
  STRATA_OPTION_ARENA_RESERVE,   /* bytes of address space to reserve up front (K/M/G/T suffix) */
  STRATA_OPTION_PURGE_THREAD, /* a background thread purges cached memory when its delay passes */
  STRATA_OPTION_DEBUG,        /* fill freed memory, canaries after blocks, Valgrind requests */
  STRATA_OPTION_GUARDED_SAMPLE_RATE, /* about one allocation in N behind guard pages; 0 off */
  STRATA_OPTION_GUARDED_MAX_SLOTS,   /* slots of the guarded region (live + quarantined blocks) */
  STRATA_OPTION_GUARDED_UNDERFLOW_PERCENT, /* share of guarded blocks against the guard before */
  STRATA_OPTION_PROFILE_RATE,   /* heap profiler: mean bytes allocated between two samples */
  STRATA_OPTION_PROFILE_SIGNAL, /* heap profiler: a signal that writes the profile; 0 none */
  STRATA_OPTION_PROFILE_LEAKS,  /* heap profiler: print the largest live stacks at exit */
  STRATA_OPTION_PROFILE_SEED,   /* heap profiler: the sampler's seed; 0 a fresh one per thread */
  /* guarded draws' and frees' share of a thread's time, per mille; 0 no limit */
  STRATA_OPTION_GUARDED_MAX_COST,
  /* bytes the heap holds before memory it fills densely gets huge pages; 0 never */
  STRATA_OPTION_HUGE_PAGES_AFTER,
  STRATA_OPTION_COUNT
} strata_option_t;

/* The option's value; 0 with errno EINVAL for an option that does not exist. */
STRATA_EXPORT long strata_option_get(strata_option_t option) STRATA_NOEXCEPT;
/* Returns 0, or EINVAL (errno set too, the option unchanged) for an option that
 * does not exist or a value outside its range (flags: 0 or 1). */
STRATA_EXPORT int strata_option_set(strata_option_t option, long value) STRATA_NOEXCEPT;
/* The option's variable name; NULL with errno EINVAL for one that does not exist. */
STRATA_EXPORT const char* strata_option_name(strata_option_t option) STRATA_NOEXCEPT;

/* Heap profiler (STRATA_PROFILE): write the sampled profile now, to `path` in
 * pprof's profile.proto format and to `path`.folded as folded stacks of live
 * bytes. Returns 0, or an errno value (errno set too): EINVAL when the profiler
 * is off or `path` is null, empty or too long, EDEADLK from a signal handler
 * that interrupted the profiler itself, or what open or write failed with. */
STRATA_EXPORT int strata_profile_dump(const char* path) STRATA_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
