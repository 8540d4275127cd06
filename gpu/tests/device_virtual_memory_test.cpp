// The device's virtual-memory operations on each backend (the CUDA one runs on
// the emulated runtime here): reserve, make physical memory, map, open,
// unmap and release, with the driver's rules on sizes and states; and, on the
// simulator, queued work that touches unmapped or closed memory reported.
#include "backends.hpp"
#include "device_errors.hpp"
#include "pinned_buffer.hpp"

#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

namespace strata::gpu::testing {
namespace {

template <class Backend>
using virtual_memory = device_test<Backend>;
TYPED_TEST_SUITE(virtual_memory, backends, backend_names);

TYPED_TEST(virtual_memory, MappedGranulesHoldWhatIsCopiedIn) {
  device& dev = *this->dev;
  const std::size_t granule = dev.vm_granularity();
  ASSERT_GT(granule, 0u);
  const stream s = dev.create_stream();
  char* base = static_cast<char*>(dev.reserve_address(4 * granule));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % granule, 0u);
  const std::size_t free_before = dev.memory().free;
  for (std::size_t i = 0; i < 2; ++i) {
    const physical_memory memory = dev.create_physical(granule);
    dev.map(base + i * granule, granule, memory);
    dev.release_physical(memory);  // kept while mapped
  }
  EXPECT_EQ(dev.memory().free, free_before - 2 * granule);
  dev.set_access(base, 2 * granule);

  // A copy across the two mappings comes back whole.
  constexpr std::size_t bytes = 64 * 1024;
  pinned_buffer pattern(dev, bytes);
  pinned_buffer back(dev, bytes);
  pattern.fill(9);
  char* across = base + granule - bytes / 2;
  dev.copy_async(across, pattern.data(), bytes, copy_kind::host_to_device, s);
  dev.copy_async(back.data(), across, bytes, copy_kind::device_to_host, s);
  dev.synchronize(s);
  EXPECT_TRUE(back.holds(9));

  dev.unmap(base, granule);
  dev.unmap(base + granule, granule);
  EXPECT_EQ(dev.memory().free, free_before);
  dev.release_address(base, 4 * granule);
  dev.destroy_stream(s);
}

TYPED_TEST(virtual_memory, TheDriversRulesAreRefusals) {
  device& dev = *this->dev;
  const std::size_t granule = dev.vm_granularity();
  char* base = static_cast<char*>(dev.reserve_address(2 * granule));
  EXPECT_EQ(error_of([&] { dev.create_physical(granule / 2); }), errc::invalid_argument);
  const physical_memory memory = dev.create_physical(granule);
  EXPECT_EQ(error_of([&] { dev.map(base + 4096, granule, memory); }), errc::invalid_argument);
  dev.map(base, granule, memory);
  EXPECT_EQ(error_of([&] { dev.map(base, granule, memory); }), errc::invalid_argument);
  // Access and unmapping take whole mapped ranges.
  EXPECT_EQ(error_of([&] { dev.set_access(base, 2 * granule); }), errc::invalid_argument);
  EXPECT_EQ(error_of([&] { dev.release_address(base, 2 * granule); }), errc::invalid_argument);
  dev.set_access(base, granule);
  EXPECT_EQ(error_of([&] { dev.unmap(base + granule, granule); }), errc::invalid_argument);
  dev.unmap(base, granule);
  dev.release_physical(memory);
  EXPECT_EQ(error_of([&] { dev.release_physical(memory); }), errc::invalid_argument);
  dev.release_address(base, 2 * granule);
}

TYPED_TEST(virtual_memory, PhysicalMemoryBeyondTheDeviceIsOutOfMemory) {
  device& dev = *this->dev;
  const std::size_t granule = dev.vm_granularity();
  const std::size_t too_much = (dev.memory().total / granule + 1) * granule;
  EXPECT_EQ(error_of([&] { dev.create_physical(too_much); }), errc::out_of_memory);
}

// The simulator's checks on queued work, with violations recorded.
class simulated_virtual_memory : public ::testing::Test {
 protected:
  simulated_virtual_memory() : sim(config()) {}
  static simulated_config config() {
    simulated_config c;
    c.capacity = std::size_t{64} << 20;
    c.on_violation = violation_policy::record;
    return c;
  }
  simulated_device sim;
};

TEST_F(simulated_virtual_memory, TouchingUnmappedOrClosedMemoryIsAViolation) {
  const std::size_t granule = sim.vm_granularity();
  char* base = static_cast<char*>(sim.reserve_address(2 * granule));
  // Each touch runs before the next change (the checks are made when work runs).
  sim.memset_async(base, 1, 256, stream{});  // nothing mapped
  sim.synchronize();
  const physical_memory memory = sim.create_physical(granule);
  sim.map(base, granule, memory);
  sim.memset_async(base, 1, 256, stream{});  // mapped, not yet accessible
  sim.synchronize();
  sim.set_access(base, granule);
  sim.memset_async(base, 1, granule, stream{});           // fine
  sim.memset_async(base + granule - 8, 1, 16, stream{});  // runs past the mapping
  sim.synchronize();
  const auto found = sim.system().violations();
  ASSERT_EQ(found.size(), 3u);
  EXPECT_NE(found[0].find("reserved but not mapped"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("not accessible"), std::string::npos) << found[1];
  EXPECT_NE(found[2].find("reserved but not mapped"), std::string::npos) << found[2];
  sim.unmap(base, granule);
  sim.release_physical(memory);
  sim.release_address(base, 2 * granule);
}

// cuMemUnmap does not wait either: work queued before it that runs after is caught.
TEST_F(simulated_virtual_memory, UnmappingUnderQueuedWorkIsCaught) {
  const std::size_t granule = sim.vm_granularity();
  char* base = static_cast<char*>(sim.reserve_address(granule));
  const physical_memory memory = sim.create_physical(granule);
  sim.map(base, granule, memory);
  sim.release_physical(memory);
  sim.set_access(base, granule);
  const stream s = sim.create_stream();
  std::atomic<bool> open{false};
  sim.launch_kernel(s, [&open] {
    while (!open) std::this_thread::yield();
  });
  sim.memset_async(base, 0, granule, s);
  sim.unmap(base, granule);
  open = true;
  sim.synchronize(s);
  const auto found = sim.system().violations();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(sim.memory().free, sim.memory().total);
  sim.release_address(base, granule);
  sim.destroy_stream(s);
}

TEST(simulated_virtual_memory_config, AGranularityPagesCannotBackIsRefused) {
  simulated_config c;
  c.vm_granularity = 3000;
  EXPECT_EQ(error_of([&] { simulated_device sim(c); }), errc::invalid_argument);
}

TEST_F(simulated_virtual_memory, CapturingStreamsForbidMapping) {
  const stream s = sim.create_stream();
  sim.begin_capture(s, capture_mode::global);
  EXPECT_EQ(error_of([&] { sim.create_physical(sim.vm_granularity()); }), errc::capture);
  EXPECT_THROW(sim.end_capture(s), device_error);
  sim.destroy_stream(s);
}

}  // namespace
}  // namespace strata::gpu::testing
