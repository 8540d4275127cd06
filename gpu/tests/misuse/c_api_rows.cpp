// Misuse rows of the GPU C API (integration.h), called as PyTorch and CuPy
// call it: libstrata-gpu-alloc loaded by name, here its build over the
// emulated CUDA runtime (a simulated GPU behind CUDA's API). Where the CUDA
// toolkit was not found the library is not built and these cells skip.
#include <strata/gpu/integration.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "gpu_acts.hpp"
#include "gpu_rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

constexpr const char* section = "GPU C API";
constexpr const char* foreign_free = "strata gpu: strata_gpu_free of";

// The library's entry point `name` as a pointer to `F`; skips the test when
// the library was not built (no CUDA toolkit).
template <class F>
F* entry(const char* name) {
#ifdef STRATA_GPU_ALLOC_LIBRARY
  static void* library = dlopen(STRATA_GPU_ALLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw std::runtime_error(std::string("cannot load ") + dlerror());
  return reinterpret_cast<F*>(dlsym(library, name));
#else
  (void)name;
  return nullptr;
#endif
}
#define STRATA_GPU_ENTRY(name) entry<decltype(name)>(#name)

// Whether the library is here; each act returns at once (skipped) when not.
bool library_missing() {
#ifdef STRATA_GPU_ALLOC_LIBRARY
  return false;
#else
  GTEST_MESSAGE_("libstrata-gpu-alloc is built only where the CUDA toolkit is found",
                 ::testing::TestPartResult::kSkip);
  return true;
#endif
}

void* gpu_malloc(std::size_t size, int device = 0, strata_gpu_stream s = nullptr) {
  return STRATA_GPU_ENTRY(strata_gpu_malloc)(size, device, s);
}
void gpu_free(void* p, std::size_t size, int device = 0, strata_gpu_stream s = nullptr) {
  STRATA_GPU_ENTRY(strata_gpu_free)(p, size, device, s);
}

// A call's C answer: `result` with errno `code`.
template <class T>
void expect_failed(T result, T failed, int code) {
  EXPECT_EQ(result, failed);
  EXPECT_EQ(errno, code) << STRATA_GPU_ENTRY(strata_gpu_last_error)();
}

int accept_every_stream(void*, strata_gpu_stream) {
  return 1;
}

const auto bogus_stream = reinterpret_cast<strata_gpu_stream>(std::uintptr_t{0x1234});

row allocation_row() {
  return {
      "strata_gpu_malloc, strata_gpu_torch_malloc, strata_gpu_free",
      "gpu/integration.h",
      section,
      {
          returns(null_argument, "strata_gpu_free(NULL, ...) is a no-op", {[] {
                    if (library_missing()) return;
                    gpu_free(nullptr, 64);
                  }}),
          returns(zero_size, "NULL, errno untouched", {[] {
                    if (library_missing()) return;
                    errno = 0;
                    EXPECT_EQ(gpu_malloc(0), nullptr);
                    EXPECT_EQ(errno, 0);
                  }}),
          sets_errno(huge_size,
                     "NULL, errno ENOMEM (strata_gpu_torch_malloc: throws the out-of-memory error)",
                     {[] {
                       if (library_missing()) return;
                       errno = 0;
                       expect_failed<void*>(gpu_malloc(SIZE_MAX), nullptr, ENOMEM);
                     }}),
          not_applicable(bad_alignment, "takes no alignment: blocks are aligned to 512 bytes"),
          aborts(foreign_pointer, foreign_free,
                 {[] {
                    if (library_missing()) return;
                    (void)gpu_malloc(64);
                    gpu_free(c_library_block(), 64);
                  },
                  [] {
                    if (library_missing()) return;
                    gpu_free(c_library_block(), 64, 1);  // a device with no allocator yet
                  }}),
          aborts(interior_pointer, foreign_free, {[] {
                   if (library_missing()) return;
                   gpu_free(static_cast<char*>(gpu_malloc(4096)) + 512, 64);
                 }}),
          aborts(double_free, foreign_free, {[] {
                   if (library_missing()) return;
                   void* p = gpu_malloc(4096);
                   gpu_free(p, 4096);
                   gpu_free(p, 4096);
                 }}),
          sets_errno(use_after_destroy,
                     "NULL, errno EINVAL for a stream CUDA destroyed or never made (the "
                     "allocators live as long as the process: a free after a stream's "
                     "destruction waits for the whole device)",
                     {[] {
                       if (library_missing()) return;
                       errno = 0;
                       expect_failed<void*>(gpu_malloc(64, 0, bogus_stream), nullptr, EINVAL);
                       gpu_free(gpu_malloc(64), 64, 0, bogus_stream);
                     }}),
          not_applicable(
              destroy_twice,
              "nothing to destroy: each device's allocator lives as long as the process"),
          returns(wrong_thread, "freed: any thread may call", {[] {
                    if (library_missing()) return;
                    void* p = gpu_malloc(4096);
                    on_another_thread([p] { gpu_free(p, 4096); });
                  }}),
          racing(aborts(racing_free, foreign_free, {[] {
                          if (library_missing()) return;
                          void* p = gpu_malloc(4096);
                          auto free_it = [p] { gpu_free(p, 4096); };
                          at_once(free_it, free_it);
                          both_frees_accepted("strata_gpu_free");
                        }})),
          aborts(other_instance, foreign_free, {[] {
                   if (library_missing()) return;
                   gpu_free(gpu_malloc(4096, 0), 4096, 1);  // device 0's block freed on device 1
                 }}),
      }};
}

row service_row() {
  const strata_gpu_pool_id pool{7, 1};
  return {
      "strata_gpu_record_stream, strata_gpu_stream_destroyed, strata_gpu_*_pool, "
      "strata_gpu_empty_cache, strata_gpu_get_stats, strata_gpu_snapshot_json",
      "gpu/integration.h",
      section,
      {
          sets_errno(
              null_argument,
              "-1, errno EINVAL for a NULL block, filter or stats struct "
              "(strata_gpu_snapshot_json with a NULL buffer returns the length)",
              {[] {
                if (library_missing()) return;
                (void)gpu_malloc(64);
                errno = 0;
                expect_failed(STRATA_GPU_ENTRY(strata_gpu_record_stream)(nullptr, 0, nullptr), -1,
                              EINVAL);
                errno = 0;
                expect_failed(STRATA_GPU_ENTRY(strata_gpu_begin_allocate_to_pool)(
                                  0, strata_gpu_pool_id{7, 1}, nullptr, nullptr),
                              -1, EINVAL);
                errno = 0;
                expect_failed(STRATA_GPU_ENTRY(strata_gpu_get_stats)(0, nullptr), -1, EINVAL);
                EXPECT_GT(STRATA_GPU_ENTRY(strata_gpu_snapshot_json)(0, nullptr, 64), 0u);
              }}),
          returns(zero_size,
                  "strata_gpu_snapshot_json of capacity 0 writes nothing, returns the "
                  "length",
                  {[] {
                    if (library_missing()) return;
                    char untouched = 'x';
                    EXPECT_GT(STRATA_GPU_ENTRY(strata_gpu_snapshot_json)(0, &untouched, 0), 0u);
                    EXPECT_EQ(untouched, 'x');
                  }}),
          not_applicable(huge_size, "takes no size"),
          not_applicable(bad_alignment, "takes no alignment"),
          sets_errno(foreign_pointer, "-1, errno EINVAL from strata_gpu_record_stream", {[] {
                       if (library_missing()) return;
                       (void)gpu_malloc(64);
                       errno = 0;
                       void* foreign = c_library_block();
                       expect_failed(
                           STRATA_GPU_ENTRY(strata_gpu_record_stream)(foreign, 0, nullptr), -1,
                           EINVAL);
                       std::free(foreign);
                     }}),
          sets_errno(interior_pointer, "-1, errno EINVAL from strata_gpu_record_stream", {[] {
                       if (library_missing()) return;
                       char* p = static_cast<char*>(gpu_malloc(4096));
                       errno = 0;
                       expect_failed(
                           STRATA_GPU_ENTRY(strata_gpu_record_stream)(p + 512, 0, nullptr), -1,
                           EINVAL);
                       gpu_free(p, 4096);
                     }}),
          sets_errno(double_free, "-1, errno EINVAL: strata_gpu_record_stream of a freed block",
                     {[] {
                       if (library_missing()) return;
                       void* p = gpu_malloc(4096);
                       gpu_free(p, 4096);
                       errno = 0;
                       expect_failed(STRATA_GPU_ENTRY(strata_gpu_record_stream)(p, 0, nullptr), -1,
                                     EINVAL);
                     }}),
          sets_errno(use_after_destroy,
                     "-1, errno EINVAL for a stream CUDA destroyed or never made", {[] {
                       if (library_missing()) return;
                       (void)gpu_malloc(64);
                       errno = 0;
                       expect_failed(STRATA_GPU_ENTRY(strata_gpu_stream_destroyed)(0, bogus_stream),
                                     -1, EINVAL);
                     }}),
          returns(destroy_twice,
                  "0: a graph pool ended or released twice, or never begun, is left as it is",
                  {[pool] {
                    if (library_missing()) return;
                    auto begin = STRATA_GPU_ENTRY(strata_gpu_begin_allocate_to_pool);
                    auto end = STRATA_GPU_ENTRY(strata_gpu_end_allocate_to_pool);
                    auto release = STRATA_GPU_ENTRY(strata_gpu_release_pool);
                    EXPECT_EQ(begin(0, pool, accept_every_stream, nullptr), 0);
                    EXPECT_EQ(end(0, pool), 0);
                    EXPECT_EQ(end(0, pool), 0);
                    EXPECT_EQ(release(0, pool), 0);
                    EXPECT_EQ(release(0, pool), 0);
                    EXPECT_EQ(release(0, strata_gpu_pool_id{9, 9}), 0);
                  }}),
          returns(wrong_thread, "any thread may call", {[] {
                    if (library_missing()) return;
                    void* p = gpu_malloc(4096);
                    on_another_thread([p] {
                      EXPECT_EQ(STRATA_GPU_ENTRY(strata_gpu_record_stream)(p, 0, nullptr), 0);
                    });
                    gpu_free(p, 4096);
                  }}),
          not_applicable(racing_free, "frees no block: strata_gpu_free's row"),
          sets_errno(other_instance, "-1, errno ENODEV for a device CUDA does not have", {[] {
                       if (library_missing()) return;
                       errno = 0;
                       expect_failed(STRATA_GPU_ENTRY(strata_gpu_empty_cache)(64), -1, ENODEV);
                       strata_gpu_stats stats{};
                       errno = 0;
                       expect_failed(STRATA_GPU_ENTRY(strata_gpu_get_stats)(-1, &stats), -1,
                                     ENODEV);
                     }}),
      }};
}

}  // namespace

std::vector<row> gpu_c_api_rows() {
  return {allocation_row(), service_row()};
}

}  // namespace strata_misuse
