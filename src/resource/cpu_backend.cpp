// The CPU facade's backends: the strata heap and the C library, linked in, and
// mimalloc and tbbmalloc, loaded with dlopen when the process can find them.
// Built without exceptions: every failure is a fallback with a reason.
#include <dlfcn.h>
#include <strata/strata.h>
#include <strata/cpu_backend.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace strata {

namespace {

// The strata heap: aligned allocation is its ordinary path.
void* strata_allocate(std::size_t bytes, std::size_t alignment) noexcept {
  return strata_malloc_aligned(bytes, alignment);
}
void strata_release(void* p) noexcept {
  strata_free(p);
}

// The C library: malloc up to its natural alignment, aligned_alloc above it.
void* libc_allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  if (bytes > SIZE_MAX - alignment) return nullptr;
  return std::aligned_alloc(alignment, (bytes + alignment - 1) & ~(alignment - 1));
}
void libc_release(void* p) noexcept {
  std::free(p);
}

using allocate_function = void* (*)(std::size_t, std::size_t) noexcept;
using free_function = void (*)(void*) noexcept;

// Entry points found in a library loaded once and never unloaded (blocks it
// handed out may outlive any allocator).
struct loaded_library {
  allocate_function allocate = nullptr;
  free_function free = nullptr;
  const char* error = nullptr;
};

// dlopen `library` and find its two entry points.
loaded_library load_library(const char* library, const char* allocate_name,
                            const char* free_name) noexcept {
  loaded_library out;
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    out.error = "its library could not be loaded";
    return out;
  }
  out.allocate = reinterpret_cast<allocate_function>(dlsym(handle, allocate_name));
  out.free = reinterpret_cast<free_function>(dlsym(handle, free_name));
  if (out.allocate == nullptr || out.free == nullptr) out.error = "its entry points are missing";
  return out;
}

// mimalloc, loaded on first use.
const loaded_library& mimalloc() noexcept {
  static const loaded_library library =
      load_library("libmimalloc.so.2", "mi_malloc_aligned", "mi_free");
  return library;
}

// tbbmalloc, loaded on first use.
const loaded_library& tbbmalloc() noexcept {
  static const loaded_library library =
      load_library("libtbbmalloc.so.2", "scalable_aligned_malloc", "scalable_aligned_free");
  return library;
}

// The strata heap, saying why it stands in for something else.
cpu_backend_functions strata_backend(const char* reason) noexcept {
  return {strata_allocate, strata_release, cpu_backend::strata, reason};
}

}  // namespace

const char* cpu_backend_name(cpu_backend backend) noexcept {
  switch (backend) {
    case cpu_backend::strata:
      return "strata";
    case cpu_backend::libc:
      return "libc";
    case cpu_backend::mimalloc:
      return "mimalloc";
    case cpu_backend::tbbmalloc:
      return "tbbmalloc";
  }
  return "unknown";
}

// Linked-in backends always load; a dlopen'ed one falls back with its reason.
cpu_backend_functions load_cpu_backend(cpu_backend requested) noexcept {
  switch (requested) {
    case cpu_backend::strata:
      return strata_backend(nullptr);
    case cpu_backend::libc:
      return {libc_allocate, libc_release, cpu_backend::libc, nullptr};
    case cpu_backend::mimalloc: {
      const loaded_library& library = mimalloc();
      if (library.error != nullptr)
        return strata_backend(
            "mimalloc unavailable: libmimalloc.so.2 could not be loaded or "
            "lacks mi_malloc_aligned/mi_free");
      return {library.allocate, library.free, cpu_backend::mimalloc, nullptr};
    }
    case cpu_backend::tbbmalloc: {
      const loaded_library& library = tbbmalloc();
      if (library.error != nullptr)
        return strata_backend(
            "tbbmalloc unavailable: libtbbmalloc.so.2 could not be loaded or "
            "lacks scalable_aligned_malloc/scalable_aligned_free");
      return {library.allocate, library.free, cpu_backend::tbbmalloc, nullptr};
    }
  }
  return strata_backend("unknown backend");
}

// STRATA_CPU_BACKEND names the backend; unset or empty means strata.
cpu_backend_functions load_configured_cpu_backend() noexcept {
  const char* name = std::getenv("STRATA_CPU_BACKEND");
  if (name == nullptr || *name == '\0') return strata_backend(nullptr);
  for (cpu_backend backend :
       {cpu_backend::strata, cpu_backend::libc, cpu_backend::mimalloc, cpu_backend::tbbmalloc})
    if (std::strcmp(name, cpu_backend_name(backend)) == 0) return load_cpu_backend(backend);
  return strata_backend("STRATA_CPU_BACKEND names no backend (strata|libc|mimalloc|tbbmalloc)");
}

}  // namespace strata
