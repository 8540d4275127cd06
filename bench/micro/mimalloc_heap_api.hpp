// mimalloc's heap API for the micro-benchmarks, loaded at run time with
// RTLD_LOCAL: linking libmimalloc would replace malloc in the whole benchmark
// and distort its malloc baselines. Every pointer is null when it is absent.
// mimalloc's header is not needed either: its heap is an opaque type here.
#pragma once

#include <dlfcn.h>
#include <cstddef>

// mimalloc's heap handle, declared as mimalloc.h declares it.
struct mi_heap_s;
using mi_heap_t = mi_heap_s;

struct mimalloc_heap_api {
  mi_heap_t* (*heap_new)() = nullptr;
  void (*heap_destroy)(mi_heap_t*) = nullptr;
  void* (*heap_malloc)(mi_heap_t*, std::size_t) = nullptr;
  void* (*heap_malloc_aligned)(mi_heap_t*, std::size_t, std::size_t) = nullptr;
  void (*free)(void*) = nullptr;

  // The functions, resolved once.
  static const mimalloc_heap_api& get() {
    static const mimalloc_heap_api api = [] {
      mimalloc_heap_api a;
      void* lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) return a;
      a.heap_new = reinterpret_cast<decltype(a.heap_new)>(dlsym(lib, "mi_heap_new"));
      a.heap_destroy = reinterpret_cast<decltype(a.heap_destroy)>(dlsym(lib, "mi_heap_destroy"));
      a.heap_malloc = reinterpret_cast<decltype(a.heap_malloc)>(dlsym(lib, "mi_heap_malloc"));
      a.heap_malloc_aligned =
          reinterpret_cast<decltype(a.heap_malloc_aligned)>(dlsym(lib, "mi_heap_malloc_aligned"));
      a.free = reinterpret_cast<decltype(a.free)>(dlsym(lib, "mi_free"));
      return a;
    }();
    return api;
  }
};
