// The one assertion the override test programs use: on failure it prints what failed
// and where, then exits with status 1 (abort() would go through the allocator under test).
#ifndef STRATA_TESTS_OVERRIDE_CHECK_H
#define STRATA_TESTS_OVERRIDE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(condition, ...)                                              \
  do {                                                                     \
    if (!(condition)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #condition); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      _Exit(1);                                                            \
    }                                                                      \
  } while (0)

// Whether the allocator promises glibc-identical edge cases (set by the driver for
// glibc and strata); other allocators are held to POSIX only.
static inline int strict_glibc_behaviour(void) {
  const char* strict = getenv("OVERRIDE_TEST_STRICT");
  return strict != NULL && strict[0] == '1';
}

// A glibc behaviour beyond what POSIX guarantees (or one that allocators commonly skip,
// such as errno on failure): a failure in strict mode, otherwise a note on standard
// output so the difference stays visible.
#define EXPECT_GLIBC(condition, ...)                                                          \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      FILE* report = strict_glibc_behaviour() ? stderr : stdout;                              \
      fprintf(report, "%s %s:%d: %s: ",                                                       \
              strict_glibc_behaviour() ? "FAIL" : "note: not glibc's behaviour at", __FILE__, \
              __LINE__, #condition);                                                          \
      fprintf(report, __VA_ARGS__);                                                           \
      fputc('\n', report);                                                                    \
      if (strict_glibc_behaviour()) _Exit(1);                                                 \
    }                                                                                         \
  } while (0)

#endif
