// libstrata-gpu-alloc.so as PyTorch and CuPy load it: by dlopen and the
// function names, through pointers of the types PyTorch calls them as. Without
// a GPU every allocation fails with its documented answer; with one, a block
// goes round the cache and shows in the statistics and the snapshot.
#include <strata/gpu/integration.h>
#include <strata/gpu/cuda.hpp>

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <sys/types.h>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace strata::gpu::testing {
namespace {

// The types PyTorch calls a pluggable allocator's functions through
// (torch/csrc/cuda/CUDAPluggableAllocator.h); its documentation writes the
// size as ssize_t, which is passed exactly as size_t is.
using torch_malloc_type = void*(size_t, int, cudaStream_t);
using torch_free_type = void(void*, size_t, int, cudaStream_t);

static_assert(std::is_same_v<strata_gpu_stream, cudaStream_t>);
static_assert(std::is_same_v<decltype(strata_gpu_torch_malloc), torch_malloc_type>);
static_assert(std::is_same_v<decltype(strata_gpu_malloc), torch_malloc_type>);
static_assert(std::is_same_v<decltype(strata_gpu_free), torch_free_type>);
static_assert(sizeof(ssize_t) == sizeof(size_t));
// The layout strata_gpu.py declares with ctypes: eight int64_t, then seven uint64_t.
static_assert(sizeof(strata_gpu_stats) == 15 * 8);

// The library, loaded once as ctypes.CDLL loads it, and its entry points.
class library {
 public:
  library() : handle_(dlopen(STRATA_GPU_ALLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL)) {}
  ~library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  library(const library&) = delete;
  library& operator=(const library&) = delete;

  bool loaded() const noexcept { return handle_ != nullptr; }

  // The entry point `name` as a pointer to `F`, or null when it is not exported.
  template <class F>
  F* find(const char* name) const noexcept {
    return reinterpret_cast<F*>(dlsym(handle_, name));
  }

 private:
  void* handle_;
};

// One loaded library for the whole program, as a host process keeps it.
library& loaded_library() {
  static library lib;
  return lib;
}

// The entry points every test calls, found by name.
struct entry_points {
  torch_malloc_type* torch_malloc =
      loaded_library().find<torch_malloc_type>("strata_gpu_torch_malloc");
  torch_malloc_type* malloc = loaded_library().find<torch_malloc_type>("strata_gpu_malloc");
  torch_free_type* free = loaded_library().find<torch_free_type>("strata_gpu_free");
  decltype(strata_gpu_record_stream)* record_stream =
      loaded_library().find<decltype(strata_gpu_record_stream)>("strata_gpu_record_stream");
  decltype(strata_gpu_empty_cache)* empty_cache =
      loaded_library().find<decltype(strata_gpu_empty_cache)>("strata_gpu_empty_cache");
  decltype(strata_gpu_get_stats)* get_stats =
      loaded_library().find<decltype(strata_gpu_get_stats)>("strata_gpu_get_stats");
  decltype(strata_gpu_snapshot_json)* snapshot_json =
      loaded_library().find<decltype(strata_gpu_snapshot_json)>("strata_gpu_snapshot_json");
  decltype(strata_gpu_last_error)* last_error =
      loaded_library().find<decltype(strata_gpu_last_error)>("strata_gpu_last_error");
  decltype(strata_gpu_stream_destroyed)* stream_destroyed =
      loaded_library().find<decltype(strata_gpu_stream_destroyed)>("strata_gpu_stream_destroyed");
  decltype(strata_gpu_begin_allocate_to_pool)* begin_pool =
      loaded_library().find<decltype(strata_gpu_begin_allocate_to_pool)>(
          "strata_gpu_begin_allocate_to_pool");
  decltype(strata_gpu_end_allocate_to_pool)* end_pool =
      loaded_library().find<decltype(strata_gpu_end_allocate_to_pool)>(
          "strata_gpu_end_allocate_to_pool");
  decltype(strata_gpu_release_pool)* release_pool =
      loaded_library().find<decltype(strata_gpu_release_pool)>("strata_gpu_release_pool");
  decltype(strata_gpu_largest_allocatable)* largest_allocatable =
      loaded_library().find<decltype(strata_gpu_largest_allocatable)>(
          "strata_gpu_largest_allocatable");
  decltype(strata_gpu_would_fit)* would_fit =
      loaded_library().find<decltype(strata_gpu_would_fit)>("strata_gpu_would_fit");
};

// The device's snapshot JSON through the two-call protocol.
std::string snapshot(const entry_points& api, int device) {
  const std::size_t length = api.snapshot_json(device, nullptr, 0);
  std::string json(length + 1, '\0');
  EXPECT_EQ(api.snapshot_json(device, json.data(), json.size()), length);
  json.resize(length);
  return json;
}

TEST(gpu_integration, LoadsAndFindsEveryEntryPointByName) {
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  const entry_points api;
  EXPECT_NE(api.torch_malloc, nullptr);
  EXPECT_NE(api.malloc, nullptr);
  EXPECT_NE(api.free, nullptr);
  EXPECT_NE(api.record_stream, nullptr);
  EXPECT_NE(api.empty_cache, nullptr);
  EXPECT_NE(api.get_stats, nullptr);
  EXPECT_NE(api.snapshot_json, nullptr);
  EXPECT_NE(api.last_error, nullptr);
  EXPECT_NE(api.stream_destroyed, nullptr);
  EXPECT_NE(api.begin_pool, nullptr);
  EXPECT_NE(api.end_pool, nullptr);
  EXPECT_NE(api.release_pool, nullptr);
  EXPECT_NE(api.largest_allocatable, nullptr);
  EXPECT_NE(api.would_fit, nullptr);
  // The library's own strata code stays private to it.
  EXPECT_EQ(loaded_library().find<void()>("_ZN6strata3gpu16make_cuda_deviceEi"), nullptr);
}

TEST(gpu_integration, WithoutAGpuAllocationFailsWithNoDevice) {
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  if (cuda_device_count() != 0) GTEST_SKIP() << "a GPU is present";
  const entry_points api;
  errno = 0;
  EXPECT_EQ(api.malloc(1024, 0, nullptr), nullptr);
  EXPECT_EQ(errno, ENODEV);
  EXPECT_NE(std::string(api.last_error()).find("no CUDA device"), std::string::npos)
      << api.last_error();
  // PyTorch's entry point throws instead: PyTorch would use a null block.
  EXPECT_THROW(api.torch_malloc(1024, 0, nullptr), std::exception);
  // Nothing was made, so there is nothing to free; every other entry point
  // answers that there is no device 0.
  EXPECT_EQ(api.malloc(0, 0, nullptr), nullptr);
  api.free(nullptr, 0, 0, nullptr);
  int word = 0;
  errno = 0;
  EXPECT_EQ(api.record_stream(&word, 0, nullptr), -1);
  EXPECT_EQ(errno, ENODEV);
  errno = 0;
  EXPECT_EQ(api.empty_cache(0), -1);
  EXPECT_EQ(errno, ENODEV);
  strata_gpu_stats stats;
  stats.segments = -1;
  EXPECT_EQ(api.get_stats(0, &stats), -1);
  EXPECT_EQ(stats.segments, 0);
  EXPECT_EQ(api.get_stats(0, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(api.snapshot_json(0, nullptr, 0), 0u);
  EXPECT_EQ(errno, ENODEV);
  std::size_t largest = 1;
  errno = 0;
  EXPECT_EQ(api.largest_allocatable(0, nullptr, &largest), -1);
  EXPECT_EQ(errno, ENODEV);
  errno = 0;
  EXPECT_EQ(api.would_fit(1024, 0, nullptr), -1);
  EXPECT_EQ(errno, ENODEV);
}

TEST(gpu_integration, ABadConfigurationIsRefusedByName) {
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const entry_points api;
  // Read when the device's allocator is made, on this test's first allocation.
  ::setenv("STRATA_GPU_ALLOC_CONF", "backend:cudaMallocAsync", 1);
  errno = 0;
  void* p = api.malloc(1024, 0, nullptr);
  const int error = errno;
  const std::string message = api.last_error();
  ::unsetenv("STRATA_GPU_ALLOC_CONF");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(error, EINVAL);
  EXPECT_NE(message.find("cudaMallocAsync"), std::string::npos) << message;
}

// integration.h promises ENODEV for a device CUDA does not have, from every
// entry point, whether or not an allocator was ever made.
TEST(gpu_integration, ADeviceCudaDoesNotHaveIsNoDevice) {
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  const entry_points api;
  const int missing = cuda_device_count();
  errno = 0;
  EXPECT_EQ(api.malloc(1024, missing, nullptr), nullptr);
  EXPECT_EQ(errno, ENODEV);
  strata_gpu_stats stats;
  errno = 0;
  EXPECT_EQ(api.get_stats(missing, &stats), -1);
  EXPECT_EQ(errno, ENODEV);
  errno = 0;
  EXPECT_EQ(api.empty_cache(-3), -1);
  EXPECT_EQ(errno, ENODEV);
  errno = 0;
  EXPECT_EQ(api.snapshot_json(missing, nullptr, 0), 0u);
  EXPECT_EQ(errno, ENODEV);
  int word = 0;
  errno = 0;
  EXPECT_EQ(api.record_stream(&word, 64, nullptr), -1);
  EXPECT_EQ(errno, ENODEV);
  errno = 0;
  EXPECT_EQ(api.stream_destroyed(missing, nullptr), -1);
  EXPECT_EQ(errno, ENODEV);
}

TEST(gpu_integrationDeathTest, FreeingAForeignPointerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  const entry_points api;
  int word = 0;
  EXPECT_DEATH(api.free(&word, sizeof word, 0, nullptr), "did not hand out");
}

TEST(gpu_integration, WithAGpuABlockGoesRoundTheCache) {
  ASSERT_TRUE(loaded_library().loaded()) << dlerror();
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const entry_points api;
  void* p = api.torch_malloc(std::size_t{1} << 20, 0, nullptr);
  ASSERT_NE(p, nullptr);
  strata_gpu_stats stats;
  ASSERT_EQ(api.get_stats(0, &stats), 0);
  EXPECT_GE(stats.allocated_bytes, std::int64_t{1} << 20);
  EXPECT_EQ(stats.allocations, 1);
  EXPECT_NE(snapshot(api, 0).find("\"segments\""), std::string::npos);
  api.free(p, std::size_t{1} << 20, 0, nullptr);
  void* again = api.malloc(std::size_t{1} << 20, 0, nullptr);
  EXPECT_EQ(again, p);  // the same stream reuses the cached block at once
  api.free(again, std::size_t{1} << 20, 0, nullptr);
  EXPECT_EQ(api.empty_cache(0), 0);
  ASSERT_EQ(api.get_stats(0, &stats), 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.cache_hits, 1u);
  // Asked without allocating: the largest request fits, and nothing is reserved for asking.
  std::size_t largest = 0;
  ASSERT_EQ(api.largest_allocatable(0, nullptr, &largest), 0);
  EXPECT_GE(largest, std::size_t{1} << 20);
  EXPECT_EQ(api.would_fit(largest, 0, nullptr), 1);
  EXPECT_EQ(api.would_fit(SIZE_MAX, 0, nullptr), 0);
  EXPECT_EQ(api.largest_allocatable(0, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(api.get_stats(0, &stats), 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
}

}  // namespace
}  // namespace strata::gpu::testing
