// strata GPU integration: the C entry points of libstrata-gpu-alloc.so
// (strata/gpu/integration.h) over the per-device caching allocators. C++
// failures become errno and a message here, so none crosses a C caller.
#include <strata/gpu/integration.h>

#include "device_allocators.hpp"

#include <strata/gpu/caching/snapshot.hpp>
#include <strata/gpu/error.hpp>
#include <strata/gpu/stream_ordered_resource.hpp>
#include <strata/ledger.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>

namespace strata::gpu::integration {
namespace {

// The latest failure's message, per thread, without allocating.
thread_local char last_error[512] = "";

// The strata stream a CUDA stream handle names.
stream as_stream(strata_gpu_stream s) noexcept {
  return stream{s};
}

// errno for a device failure.
int errno_for(errc code) noexcept {
  switch (code) {
    case errc::out_of_memory:
      return ENOMEM;
    case errc::invalid_argument:
      return EINVAL;
    case errc::no_device:
      return ENODEV;
    case errc::capture:
      return EPERM;
    case errc::not_ready:
    case errc::backend:
      break;
  }
  return EIO;
}

// Keep errno and the message for a failure.
void fail(int code, const char* message) noexcept {
  std::snprintf(last_error, sizeof last_error, "%s", message);
  errno = code;
}

// Translate the exception being handled into errno and the message.
void fail_with_current_exception() noexcept {
  try {
    throw;
  } catch (const device_error& e) {
    fail(errno_for(e.code()), e.what());
  } catch (const std::invalid_argument& e) {
    fail(EINVAL, e.what());
  } catch (const std::bad_alloc& e) {
    fail(ENOMEM, e.what());
  } catch (const std::exception& e) {
    fail(EIO, e.what());
  } catch (...) {
    fail(EIO, "strata gpu: unknown failure");
  }
}

// A free of memory this library did not hand out: one line, then abort, as
// the heap does for a foreign pointer (never silent corruption).
[[noreturn]] void abort_on_foreign_free(const void* p, int device) noexcept {
  std::fprintf(stderr,
               "strata gpu: strata_gpu_free of %p on device %d, which strata_gpu_malloc did not "
               "hand out there\n",
               p, device);
  std::abort();
}

// The allocation both malloc entry points share; throws on failure.
void* allocate(std::size_t size, int device, strata_gpu_stream s) {
  if (size == 0) return nullptr;
  return allocator_for(device).allocate_on(size, device_alignment, as_stream(s));
}

// The device's allocator, or null when none was made yet; a device that does
// not exist is ENODEV (thrown).
caching_allocator* existing_allocator(int device) {
  check_device(device);
  return allocator_if_made(device);
}

// Run `body` on an existing allocator (none made yet: nothing to do), as a C call.
template <class Body>
int with_allocator(int device, Body body) noexcept {
  try {
    if (caching_allocator* cache = existing_allocator(device)) body(*cache);
    return 0;
  } catch (...) {
    fail_with_current_exception();
    return -1;
  }
}

// PyTorch's filter, a C function over a context, as the allocator's.
std::function<bool(stream)> as_filter(strata_gpu_stream_filter filter, void* context) {
  return [filter, context](stream s) {
    return filter(context, static_cast<strata_gpu_stream>(s.handle)) != 0;
  };
}

graph_pool_id as_pool(strata_gpu_pool_id pool) {
  return graph_pool_id{pool.first, pool.second};
}

}  // namespace
}  // namespace strata::gpu::integration

using namespace strata::gpu;
using namespace strata::gpu::integration;

// Null and errno instead of an exception, for C and ctypes callers.
void* strata_gpu_malloc(size_t size, int device, strata_gpu_stream stream) {
  try {
    return allocate(size, device, stream);
  } catch (...) {
    fail_with_current_exception();
    return nullptr;
  }
}

// PyTorch does not check the pointer, so a failure must be an exception.
void* strata_gpu_torch_malloc(size_t size, int device, strata_gpu_stream stream) {
  return allocate(size, device, stream);
}

// Back to the device's cache in stream order; a foreign pointer aborts, any
// other failure (CUDA shutting down) is reported on stderr and the block kept.
void strata_gpu_free(void* ptr, size_t size, int device, strata_gpu_stream stream) {
  if (ptr == nullptr) return;
  caching_allocator* cache = allocator_if_made(device);
  if (cache == nullptr) abort_on_foreign_free(ptr, device);
  try {
    cache->deallocate_on(ptr, size, device_alignment, as_stream(stream));
  } catch (const device_error& e) {
    if (e.code() == errc::invalid_argument) abort_on_foreign_free(ptr, device);
    fail_with_current_exception();
    std::fprintf(stderr, "strata gpu: strata_gpu_free: %s\n", e.what());
  } catch (...) {
    fail_with_current_exception();
    std::fprintf(stderr, "strata gpu: strata_gpu_free: %s\n", last_error);
  }
}

// Only a block of a device's allocator can be recorded, so none is made here.
int strata_gpu_record_stream(void* ptr, int device, strata_gpu_stream stream) {
  try {
    caching_allocator* cache = existing_allocator(device);
    if (cache == nullptr) {
      fail(EINVAL,
           "strata gpu: strata_gpu_record_stream of memory strata_gpu_malloc did not "
           "hand out on this device");
      return -1;
    }
    cache->record_stream(ptr, as_stream(stream));
    return 0;
  } catch (...) {
    fail_with_current_exception();
    return -1;
  }
}

// A device without an allocator caches nothing with the stream.
int strata_gpu_stream_destroyed(int device, strata_gpu_stream stream) {
  return with_allocator(
      device, [&](caching_allocator& cache) { cache.stream_destroyed(as_stream(stream)); });
}

// A graph pool is made with the device's allocator, if need be.
int strata_gpu_begin_allocate_to_pool(int device, strata_gpu_pool_id pool,
                                      strata_gpu_stream_filter filter, void* context) {
  if (filter == nullptr) {
    fail(EINVAL, "strata gpu: strata_gpu_begin_allocate_to_pool without a filter");
    return -1;
  }
  try {
    allocator_for(device).begin_allocate_to_pool(as_pool(pool), as_filter(filter, context));
    return 0;
  } catch (...) {
    fail_with_current_exception();
    return -1;
  }
}

int strata_gpu_end_allocate_to_pool(int device, strata_gpu_pool_id pool) {
  return with_allocator(
      device, [&](caching_allocator& cache) { cache.end_allocate_to_pool(as_pool(pool)); });
}

int strata_gpu_release_pool(int device, strata_gpu_pool_id pool) {
  return with_allocator(device,
                        [&](caching_allocator& cache) { cache.release_pool(as_pool(pool)); });
}

// A device without an allocator has nothing cached.
int strata_gpu_empty_cache(int device) {
  return with_allocator(device, [](caching_allocator& cache) { cache.empty_cache(); });
}

// The allocator is made if need be: the answer for a fresh one is CUDA's free memory.
int strata_gpu_largest_allocatable(int device, strata_gpu_stream stream, size_t* bytes) {
  if (bytes == nullptr) {
    fail(EINVAL, "strata gpu: strata_gpu_largest_allocatable without a size to fill");
    return -1;
  }
  try {
    *bytes = allocator_for(device).largest_allocatable(as_stream(stream));
    return 0;
  } catch (...) {
    fail_with_current_exception();
    return -1;
  }
}

// 1 or 0 by the allocation path's rules, none of its choices taken.
int strata_gpu_would_fit(size_t size, int device, strata_gpu_stream stream) {
  try {
    return allocator_for(device).would_fit(size, as_stream(stream)) ? 1 : 0;
  } catch (...) {
    fail_with_current_exception();
    return -1;
  }
}

// Both pools' totals; zeros before the device's first allocation.
int strata_gpu_get_stats(int device, strata_gpu_stats* out) {
  if (out == nullptr) {
    fail(EINVAL, "strata gpu: strata_gpu_get_stats without a struct to fill");
    return -1;
  }
  std::memset(out, 0, sizeof *out);
  return with_allocator(device, [out](caching_allocator& cache) {
    const caching_stats s = cache.stats();
    out->reserved_bytes = s.all.reserved_bytes.current;
    out->reserved_bytes_peak = s.all.reserved_bytes.peak;
    out->allocated_bytes = s.all.allocated_bytes.current;
    out->allocated_bytes_peak = s.all.allocated_bytes.peak;
    out->active_bytes = s.all.active_bytes.current;
    out->requested_bytes = s.all.requested_bytes.current;
    out->segments = s.all.segment.current;
    out->allocations = s.all.allocation.current;
    out->cache_hits = s.cache_hits;
    out->cache_misses = s.cache_misses;
    out->cross_stream_reuses = s.cross_stream_reuses;
    out->alloc_retries = s.num_alloc_retries;
    out->ooms = s.num_ooms;
    out->device_allocs = s.num_device_allocs;
    out->device_frees = s.num_device_frees;
  });
}

// snprintf's contract: the full length back, the buffer filled as far as it goes.
size_t strata_gpu_snapshot_json(int device, char* buffer, size_t capacity) {
  try {
    std::string json = "{}";
    if (caching_allocator* cache = existing_allocator(device)) json = to_json(cache->snapshot());
    if (buffer != nullptr && capacity != 0) {
      const std::size_t n = json.size() < capacity ? json.size() : capacity - 1;
      std::memcpy(buffer, json.data(), n);
      buffer[n] = '\0';
    }
    return json.size();
  } catch (...) {
    fail_with_current_exception();
    return 0;
  }
}

// The plugin's own ledger (its allocators and devices) in `format`, sized like the snapshot.
size_t strata_gpu_ledger(int format, char* buffer, size_t capacity) {
  try {
    if (format < 0 || format > 2) throw std::invalid_argument("strata_gpu_ledger: unknown format");
    strata::memory_ledger ledger = strata::memory_ledger::take();
    std::string text = format == 0 ? ledger.text() : format == 1 ? ledger.json() : ledger.html();
    if (buffer != nullptr && capacity != 0) {
      const std::size_t n = text.size() < capacity ? text.size() : capacity - 1;
      std::memcpy(buffer, text.data(), n);
      buffer[n] = '\0';
    }
    return text.size();
  } catch (...) {
    fail_with_current_exception();
    return 0;
  }
}

// The thread's message; it stays valid until the thread's next failure.
const char* strata_gpu_last_error(void) {
  return last_error;
}
