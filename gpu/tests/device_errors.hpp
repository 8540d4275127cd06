// What a device call threw, for tests that check the kind of a refusal.
#ifndef STRATA_GPU_TESTS_DEVICE_ERRORS_HPP
#define STRATA_GPU_TESTS_DEVICE_ERRORS_HPP

#include <strata/gpu/error.hpp>

#include <optional>
#include <utility>

namespace strata::gpu::testing {

// The code of the device_error `call` throws, or none when it throws nothing.
template <class Call>
std::optional<errc> error_of(Call&& call) {
  try {
    std::forward<Call>(call)();
  } catch (const device_error& error) {
    return error.code();
  }
  return std::nullopt;
}

}  // namespace strata::gpu::testing

#endif
