// mimalloc's first-class heaps (mi_heap_new ... mi_heap_destroy), the seed 003's
// strategy C, reached without linking mimalloc: linking it would make it the malloc
// of every worker. The library is opened with RTLD_LOCAL on first use, so the
// process's malloc stays whatever the worker was started with.
#pragma once

#include <cstddef>

namespace strata_bench {

struct mimalloc_heap_functions {
  void* (*heap_new)() = nullptr;
  void (*heap_destroy)(void* heap) = nullptr;
  void* (*heap_malloc)(void* heap, std::size_t bytes) = nullptr;
  void (*free)(void* block) = nullptr;
};

// The functions, resolved once; null pointers when libmimalloc.so.2 is not installed.
const mimalloc_heap_functions& mimalloc_heap_api();

// Whether the heap API could be loaded.
inline bool mimalloc_heap_available() {
  return mimalloc_heap_api().heap_new != nullptr;
}

}  // namespace strata_bench
