// The backends the shared GPU suites run on: always the simulated device, and
// the CUDA one where the toolkit was found (its tests skip without a GPU).
#ifndef STRATA_GPU_TESTS_BACKENDS_HPP
#define STRATA_GPU_TESTS_BACKENDS_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/simulated.hpp>
#ifdef STRATA_GPU_HAS_CUDA
#include <strata/gpu/cuda.hpp>
#endif

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace strata::gpu::testing {

struct simulated_backend {
  // Host-backed, so queued work can write and verify patterns.
  static std::unique_ptr<device> make() {
    simulated_config config;
    config.capacity = std::size_t{256} << 20;
    return std::make_unique<simulated_device>(config);
  }
};

// A host-backed simulated device whose managed pages cost 10 µs to move by a
// fault and 1 µs by prefetch: enough to see, small enough to run fast.
inline simulated_config with_migration_costs() {
  simulated_config c;
  c.managed.fault_migration = std::chrono::microseconds(10);
  c.managed.prefetch_migration = std::chrono::microseconds(1);
  return c;
}

#ifdef STRATA_GPU_HAS_CUDA
struct cuda_backend {
  // Null without a GPU: the fixture skips.
  static std::unique_ptr<device> make() {
    if (cuda_device_count() == 0) return nullptr;
    return make_cuda_device(0);
  }
};
using backends = ::testing::Types<simulated_backend, cuda_backend>;
#else
using backends = ::testing::Types<simulated_backend>;
#endif

// Test names say the backend rather than a type index.
struct backend_names {
  template <class Backend>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<Backend, simulated_backend>)
      return "simulated";
    else
      return "cuda";
  }
};

// A device per test, or a skip where the backend has no device.
template <class Backend>
class device_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dev = Backend::make();
    if (!dev) GTEST_SKIP() << "no CUDA device";
  }

  // Whether this backend promises the simulated device's exact reuse choices.
  bool simulated() const { return std::string(dev->backend_name()) == "simulated"; }

  std::unique_ptr<device> dev;
};

}  // namespace strata::gpu::testing

#endif
