// The CPU facade's backends (see cpu_allocator.hpp): which ones exist, and
// loading one. Kept apart from the facade so the loader builds without
// exceptions.
#ifndef STRATA_CPU_BACKEND_HPP
#define STRATA_CPU_BACKEND_HPP

#include <cstddef>

namespace strata {

enum class cpu_backend { strata, libc, mimalloc, tbbmalloc };

// A loaded backend: its entry points, which backend it is, and why it is not
// the one asked for (null when it is).
struct cpu_backend_functions {
  void* (*allocate)(std::size_t bytes, std::size_t alignment) noexcept;
  void (*free)(void* p) noexcept;
  cpu_backend backend;
  const char* fallback_reason;
};

// The backend's name as STRATA_CPU_BACKEND spells it.
__attribute__((visibility("default"))) const char* cpu_backend_name(cpu_backend backend) noexcept;

// Load `requested`, or the strata heap with a reason when it cannot be loaded.
__attribute__((visibility("default"))) cpu_backend_functions load_cpu_backend(
    cpu_backend requested) noexcept;

// Load the backend STRATA_CPU_BACKEND names (strata when unset).
__attribute__((visibility("default"))) cpu_backend_functions load_configured_cpu_backend() noexcept;

}  // namespace strata

#endif  // STRATA_CPU_BACKEND_HPP
