#include "mimalloc_heap.hpp"

#include <dlfcn.h>

namespace strata_bench {

namespace {

// Resolves `name` in `library` into a function pointer of the given type.
template <class Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
}

// Opens the library and resolves the four functions; all null unless all are found.
mimalloc_heap_functions load() {
  mimalloc_heap_functions api;
  void* library = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return api;
  resolve(library, "mi_heap_new", api.heap_new);
  resolve(library, "mi_heap_destroy", api.heap_destroy);
  resolve(library, "mi_heap_malloc", api.heap_malloc);
  resolve(library, "mi_free", api.free);
  if (api.heap_destroy == nullptr || api.heap_malloc == nullptr || api.free == nullptr) {
    return {};
  }
  return api;
}

}  // namespace

const mimalloc_heap_functions& mimalloc_heap_api() {
  static const mimalloc_heap_functions api = load();
  return api;
}

}  // namespace strata_bench
