// Keeps the compiler from removing allocations whose results are otherwise unused:
// GCC and Clang may delete a malloc/free or new/delete pair whose pointer never escapes.
#pragma once

namespace strata_bench {

// Makes `pointer` (and the memory behind it) visible to code the compiler cannot see.
inline void escape(const void* pointer) {
  asm volatile("" : : "g"(pointer) : "memory");
}

// Makes a computed value observable so the loop that produced it is kept.
template <class T>
inline void keep_value(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

}  // namespace strata_bench
