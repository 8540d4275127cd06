// strata's caching allocator as PyTorch's CUDA allocator, with what the plain
// route (CUDAPluggableAllocator loading two C symbols by name) cannot carry:
// - out of memory raised as torch.OutOfMemoryError (c10::OutOfMemoryError) with
//   strata's message, where the plain route gives a RuntimeError;
// - Tensor.record_stream reaching strata_gpu_record_stream (the plain route
//   drops it, so a block could be reused while another stream still uses it);
// - the CUDA graph pool hooks (torch.cuda.graph) reaching strata's private
//   pools, through a C trampoline over PyTorch's stream filter;
// - torch.cuda.empty_cache reaching strata_gpu_empty_cache.
//
// strata_gpu.use_with_pytorch() builds it at run time with
// torch.utils.cpp_extension (PyTorch 2.3 or newer: the setters used here have
// had these names and signatures since 2.3). It links only PyTorch:
// libstrata-gpu-alloc.so is opened with dlopen by the path strata_gpu.py
// loaded it from, so both reach the same allocator per device.
#include <strata/gpu/integration.h>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace pluggable = torch::cuda::CUDAPluggableAllocator;

// The library's entry points, typed from its header so a change there fails the build.
struct entry_points {
  decltype(&strata_gpu_malloc) malloc = nullptr;
  decltype(&strata_gpu_free) free = nullptr;
  decltype(&strata_gpu_record_stream) record_stream = nullptr;
  decltype(&strata_gpu_empty_cache) empty_cache = nullptr;
  decltype(&strata_gpu_last_error) last_error = nullptr;
  decltype(&strata_gpu_begin_allocate_to_pool) begin_allocate_to_pool = nullptr;
  decltype(&strata_gpu_end_allocate_to_pool) end_allocate_to_pool = nullptr;
  decltype(&strata_gpu_release_pool) release_pool = nullptr;
};

// Filled once by install(), before PyTorch can call any hook below.
entry_points strata;

// Why the calling thread's latest strata call failed, with errno's name for it.
std::string failure_text(int code) {
  return std::string(strata.last_error()) + " (" + std::strerror(code) + ")";
}

// alloc_fn. PyTorch uses the pointer unchecked, so a failure throws: out of
// memory as c10::OutOfMemoryError (torch.OutOfMemoryError in Python), anything
// else (EPERM: a call CUDA forbids during capture) as c10::Error.
void* allocate(size_t size, int device, cudaStream_t stream) {
  void* block = strata.malloc(size, device, stream);
  if (block != nullptr || size == 0) return block;
  const int code = errno;
  const std::string message = "strata could not allocate " + std::to_string(size) +
                              " bytes on CUDA device " + std::to_string(device) + ": " +
                              failure_text(code);
  TORCH_CHECK_WITH(OutOfMemoryError, code != ENOMEM, message);
  C10_THROW_ERROR(Error, message);
}

// free_fn: back to strata's cache in the order of the stream it was allocated on.
void deallocate(void* block, size_t size, int device, cudaStream_t stream) {
  strata.free(block, size, device, stream);
}

// record_stream_fn. PyTorch passes the data pointer and the stream but not the
// device, so the current device is asked first and the others after it on
// EINVAL (not a block of that device's allocator): one call on one GPU.
void record_stream(void* block, cudaStream_t stream) {
  const int current = c10::cuda::current_device();
  if (strata.record_stream(block, current, stream) == 0) return;
  int code = errno;
  std::string why = failure_text(code);
  const int devices = c10::cuda::device_count();
  for (int device = 0; device < devices && code == EINVAL; ++device) {
    if (device == current) continue;
    if (strata.record_stream(block, device, stream) == 0) return;
    code = errno;
    why = failure_text(code);
  }
  C10_THROW_ERROR(Error, "Tensor.record_stream through strata: " + why);
}

// reset_fn (torch.cuda.empty_cache): every device's fully free segments back to CUDA.
void empty_cache() {
  const int devices = c10::cuda::device_count();
  for (int device = 0; device < devices; ++device) {
    TORCH_CHECK(strata.empty_cache(device) == 0, "strata_gpu_empty_cache on CUDA device ", device,
                ": ", failure_text(errno));
  }
}

using stream_filter = std::function<bool(cudaStream_t)>;

// PyTorch's MempoolId_t as strata names a pool.
strata_gpu_pool_id pool_id(const c10::cuda::MempoolId_t& pool) {
  return strata_gpu_pool_id{pool.first, pool.second};
}

// The stream filters of the captures under way. strata holds a C pointer to
// each from begin to end, so each lives here, at a fixed address, until then.
class capture_filters {
 public:
  // Keep `filter` for the pool's capture; the address strata is handed.
  stream_filter* keep(int device, const c10::cuda::MempoolId_t& pool, stream_filter filter) {
    std::lock_guard<std::mutex> guard(lock_);
    auto kept = std::make_unique<stream_filter>(std::move(filter));
    stream_filter* address = kept.get();
    by_pool_.emplace(key{device, pool.first, pool.second}, std::move(kept));
    return address;
  }

  // Drop one filter strata refused at begin.
  void forget(stream_filter* filter) {
    std::lock_guard<std::mutex> guard(lock_);
    for (auto it = by_pool_.begin(); it != by_pool_.end(); ++it) {
      if (it->second.get() == filter) {
        by_pool_.erase(it);
        return;
      }
    }
  }

  // Drop the pool's filters once its allocation has ended (as PyTorch's own
  // allocator ends every capture into that pool at once).
  void forget_pool(int device, const c10::cuda::MempoolId_t& pool) {
    std::lock_guard<std::mutex> guard(lock_);
    by_pool_.erase(key{device, pool.first, pool.second});
  }

 private:
  using key = std::tuple<int, std::uint64_t, std::uint64_t>;
  std::mutex lock_;
  std::multimap<key, std::unique_ptr<stream_filter>> by_pool_;
};

capture_filters filters;

// strata's C filter over PyTorch's: non-zero when `stream` allocates into the
// capture's pool. An exception cannot cross strata's C frames; a filter that
// fails answers no, and the allocation then takes the ordinary path, which
// strata refuses during a capture (EPERM), so the failure still surfaces.
int filter_trampoline(void* context, strata_gpu_stream stream) {
  try {
    return (*static_cast<stream_filter*>(context))(stream) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// begin_allocate_to_pool: called by CUDAGraph::capture_begin before the
// capture starts, so strata can set the pool's memory aside then.
void begin_allocate_to_pool(int device, c10::cuda::MempoolId_t pool, stream_filter filter) {
  stream_filter* kept = filters.keep(device, pool, std::move(filter));
  if (strata.begin_allocate_to_pool(device, pool_id(pool), filter_trampoline, kept) == 0) return;
  const std::string why = failure_text(errno);
  filters.forget(kept);
  C10_THROW_ERROR(Error, "strata could not begin allocating to CUDA graph pool (" +
                             std::to_string(pool.first) + ", " + std::to_string(pool.second) +
                             "): " + why);
}

// end_allocate_to_pool: called by CUDAGraph::capture_end after the capture.
void end_allocate_to_pool(int device, c10::cuda::MempoolId_t pool) {
  const bool ended = strata.end_allocate_to_pool(device, pool_id(pool)) == 0;
  const std::string why = ended ? std::string() : failure_text(errno);
  filters.forget_pool(device, pool);
  TORCH_CHECK(ended, "strata could not end allocating to CUDA graph pool (", pool.first, ", ",
              pool.second, "): ", why);
}

// release_pool: called from CUDAGraph::reset, which the graph's destructor
// calls, where an exception would end the process; a failure is a warning.
void release_pool(int device, c10::cuda::MempoolId_t pool) {
  if (strata.release_pool(device, pool_id(pool)) != 0) {
    TORCH_WARN("strata could not release CUDA graph pool (", pool.first, ", ", pool.second,
               "): ", failure_text(errno));
  }
}

// Look `name` up in the library into `slot`; whether it is there.
template <class Function>
bool resolve(void* library, const char* name, Function& slot) {
  slot = reinterpret_cast<Function>(dlsym(library, name));
  return slot != nullptr;
}

// Open the library and find its entry points; the graph pool entry points
// the library lacks are named in the answer, and their hooks stay unset.
std::vector<std::string> open_library(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(library != nullptr, "strata: cannot open ", path, ": ", dlerror());
  const bool complete = resolve(library, "strata_gpu_malloc", strata.malloc) &&
                        resolve(library, "strata_gpu_free", strata.free) &&
                        resolve(library, "strata_gpu_record_stream", strata.record_stream) &&
                        resolve(library, "strata_gpu_empty_cache", strata.empty_cache) &&
                        resolve(library, "strata_gpu_last_error", strata.last_error);
  TORCH_CHECK(complete, "strata: ", path, " lacks an entry point of strata/gpu/integration.h");
  std::vector<std::string> missing;
  if (!resolve(library, "strata_gpu_begin_allocate_to_pool", strata.begin_allocate_to_pool))
    missing.emplace_back("strata_gpu_begin_allocate_to_pool");
  if (!resolve(library, "strata_gpu_end_allocate_to_pool", strata.end_allocate_to_pool))
    missing.emplace_back("strata_gpu_end_allocate_to_pool");
  if (!resolve(library, "strata_gpu_release_pool", strata.release_pool))
    missing.emplace_back("strata_gpu_release_pool");
  return missing;
}

// Make strata PyTorch's CUDA allocator (before PyTorch initialises CUDA, as
// changeCurrentAllocator requires). Returns the graph pool entry points the
// library lacks: without all three, CUDA graphs are not wired.
std::vector<std::string> install(const std::string& library_path) {
  const std::vector<std::string> missing = open_library(library_path);
  std::shared_ptr<c10::cuda::CUDACachingAllocator::CUDAAllocator> allocator =
      pluggable::createCustomAllocator(allocate, deallocate);
  // createCustomAllocator makes a CUDAPluggableAllocator; its setters are not virtual.
  auto& hooks = static_cast<pluggable::CUDAPluggableAllocator&>(*allocator);
  hooks.set_record_stream_fn(record_stream);
  hooks.set_reset_fn(empty_cache);
  if (missing.empty()) {
    hooks.set_begin_allocate_to_pool(begin_allocate_to_pool);
    hooks.set_end_allocate_to_pool_fn(end_allocate_to_pool);
    hooks.set_release_pool(release_pool);
  }
  pluggable::changeCurrentAllocator(allocator);
  return missing;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.doc() = "strata's caching allocator as PyTorch's CUDA allocator (see strata_gpu.py)";
  module.def("install", &install, pybind11::arg("library_path"),
             "Make libstrata-gpu-alloc.so at library_path PyTorch's CUDA allocator; returns the "
             "graph pool entry points it lacks (CUDA graphs are wired only when none is missing).");
}
