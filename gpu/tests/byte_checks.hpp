// What the GPU suites check memory with: whether every byte of a block holds
// the value work wrote into it.
#ifndef STRATA_GPU_TESTS_BYTE_CHECKS_HPP
#define STRATA_GPU_TESTS_BYTE_CHECKS_HPP

#include <cstddef>
#include <cstdint>

namespace strata::gpu::testing {

// Whether `bytes` at p all hold `value`.
inline bool holds(const void* p, std::size_t bytes, std::uint8_t value) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != value) return false;
  return true;
}

}  // namespace strata::gpu::testing

#endif
