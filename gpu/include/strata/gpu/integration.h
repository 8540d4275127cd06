/* strata GPU integration: the C entry points of libstrata-gpu-alloc.so, the
 * strata caching allocator for programs that load an allocator by name:
 * PyTorch's CUDAPluggableAllocator (strata_gpu_torch_malloc, strata_gpu_free)
 * and, through ctypes, CuPy's set_allocator (gpu/integration/python/strata_gpu.py).
 *
 * One strata::gpu::caching_allocator per CUDA device over the CUDA backend,
 * made on the first allocation on that device and configured then from
 * STRATA_GPU_ALLOC_CONF (max_split_size_mb, roundup_power2_divisions,
 * garbage_collection_threshold, graph_pool_reserve_mb; backend must stay
 * native). It lives as long as the process: frees may arrive from other
 * libraries' destructors at exit. Each call runs with `device` as the calling
 * thread's current CUDA device and restores the previous one before it
 * returns; a device number CUDA does not have is ENODEV for every entry point.
 * The library is built only where CMake finds the CUDA toolkit, and needs a
 * GPU to hand out memory.
 *
 * Failures. The C entry points never throw: strata_gpu_malloc returns NULL and
 * the others -1 (strata_gpu_snapshot_json 0), with errno set (ENOMEM: out of
 * memory; ENODEV: no such device or no GPU at all; EINVAL: a bad argument or
 * a bad STRATA_GPU_ALLOC_CONF; EPERM: a call CUDA forbids while a stream is
 * capturing; EIO: any other CUDA failure) and a message for
 * strata_gpu_last_error(). strata_gpu_torch_malloc throws the allocator's
 * exception instead (a std::exception whose what() says why), because PyTorch
 * uses the pointer its allocator returns without checking it and calls it
 * from C++, which turns the exception into a Python RuntimeError (the
 * extension strata_gpu.py builds raises torch.OutOfMemoryError instead).
 * Freeing a pointer the allocator did not hand out prints one line and aborts. */
#ifndef STRATA_GPU_INTEGRATION_H
#define STRATA_GPU_INTEGRATION_H

#include <stddef.h>
#include <stdint.h>

/* The library exports exactly what this header declares with it. */
#define STRATA_GPU_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA's stream handle: cudaStream_t is this very type, so callers pass theirs
 * unchanged and this header needs no CUDA header. NULL is the default stream. */
typedef struct CUstream_st* strata_gpu_stream;

/* `size` bytes on `device` for work queued on `stream`, usable by that work at
 * once; NULL for 0 bytes, and NULL with errno on failure. */
STRATA_GPU_EXPORT void* strata_gpu_malloc(size_t size, int device, strata_gpu_stream stream);

/* PyTorch's alloc_fn: strata_gpu_malloc, but a failure throws. */
STRATA_GPU_EXPORT void* strata_gpu_torch_malloc(size_t size, int device, strata_gpu_stream stream);

/* PyTorch's free_fn, and the free for strata_gpu_malloc: `ptr` goes back to the
 * cache in the order of `stream`, reusable there at once and on other streams
 * after the work queued on `stream` so far. NULL does nothing. */
STRATA_GPU_EXPORT void strata_gpu_free(void* ptr, size_t size, int device,
                                       strata_gpu_stream stream);

/* `ptr` is also used by work on `stream`: once freed, it waits for the work
 * queued there before any reuse. 0, or -1 with errno. */
STRATA_GPU_EXPORT int strata_gpu_record_stream(void* ptr, int device, strata_gpu_stream stream);

/* `stream` is about to be destroyed (call it before cudaStreamDestroy): blocks
 * cached with it wait for an event recorded on it now, so a new stream that
 * CUDA hands the same handle never counts as the same stream. 0, or -1 with errno. */
STRATA_GPU_EXPORT int strata_gpu_stream_destroyed(int device, strata_gpu_stream stream);

/* CUDA graph capture (PyTorch's graph pools). A pool is named by two numbers,
 * as PyTorch's MempoolId_t. Between begin and end, an allocation on a stream
 * for which filter(context, stream) returns non-zero comes from the private
 * pool `pool`: its memory is set aside at begin (before the capture starts;
 * STRATA_GPU_ALLOC_CONF's graph_pool_reserve_mb says how much at least), so
 * nothing during the capture calls cudaMalloc or queries an event. A capture
 * that needs more than was set aside fails with ENOMEM and says so. The pool
 * keeps its memory for the graph's replays until strata_gpu_release_pool,
 * which waits for the device and hands the memory back to the cache. Each
 * returns 0, or -1 with errno. */
typedef struct strata_gpu_pool_id {
  uint64_t first;
  uint64_t second;
} strata_gpu_pool_id;
typedef int (*strata_gpu_stream_filter)(void* context, strata_gpu_stream stream);
STRATA_GPU_EXPORT int strata_gpu_begin_allocate_to_pool(int device, strata_gpu_pool_id pool,
                                                        strata_gpu_stream_filter filter,
                                                        void* context);
STRATA_GPU_EXPORT int strata_gpu_end_allocate_to_pool(int device, strata_gpu_pool_id pool);
STRATA_GPU_EXPORT int strata_gpu_release_pool(int device, strata_gpu_pool_id pool);

/* Give the device's fully free cached segments back to CUDA. 0, or -1 with errno. */
STRATA_GPU_EXPORT int strata_gpu_empty_cache(int device);

/* Asked without allocating (the device's allocator is made if need be): the
 * largest request on `stream` that would succeed now, stored in *bytes, from
 * the cached blocks, the blocks that would be split and CUDA's free memory
 * with the idle segments a retry gives back. 0, or -1 with errno (EINVAL: a
 * null `bytes`). */
STRATA_GPU_EXPORT int strata_gpu_largest_allocatable(int device, strata_gpu_stream stream,
                                                     size_t* bytes);

/* Whether `size` bytes on `stream` would be served now, by the same rules: 1
 * or 0, or -1 with errno. */
STRATA_GPU_EXPORT int strata_gpu_would_fit(size_t size, int device, strata_gpu_stream stream);

/* The allocator's totals for one device, both pools together (bytes and counts). */
typedef struct strata_gpu_stats {
  int64_t reserved_bytes; /* held in segments from CUDA */
  int64_t reserved_bytes_peak;
  int64_t allocated_bytes; /* handed out, rounded */
  int64_t allocated_bytes_peak;
  int64_t active_bytes;    /* handed out or waiting for other streams' work */
  int64_t requested_bytes; /* as the callers asked */
  int64_t segments;
  int64_t allocations; /* blocks handed out now */
  uint64_t cache_hits;
  uint64_t cache_misses;
  uint64_t cross_stream_reuses;
  uint64_t alloc_retries; /* times the cache was emptied to retry an allocation */
  uint64_t ooms;
  uint64_t device_allocs; /* segments taken from CUDA */
  uint64_t device_frees;
} strata_gpu_stats;

/* Fill `stats` for `device` (all zero before its first allocation). 0, or -1 with errno. */
STRATA_GPU_EXPORT int strata_gpu_get_stats(int device, strata_gpu_stats* stats);

/* The device's memory snapshot as JSON (PyTorch's key names): writes at most
 * `capacity` bytes, NUL included, and returns the JSON's length without the
 * NUL, so a call with a buffer too small says how much to allocate. "{}"
 * before the device's first allocation; 0 with errno on failure. */
STRATA_GPU_EXPORT size_t strata_gpu_snapshot_json(int device, char* buffer, size_t capacity);

/* The memory ledger (strata/ledger.hpp) of this library's allocators: each
 * device's caching allocator with what it holds and hands out, the device's
 * own view (free, total, used outside strata) and, where a strata heap is
 * loaded (LD_PRELOAD of libstrata-malloc.so), the heap's statistics. format:
 * 0 text, 1 JSON, 2 a self-contained HTML page. Sized like
 * strata_gpu_snapshot_json; 0 with errno EINVAL for another format. */
STRATA_GPU_EXPORT size_t strata_gpu_ledger(int format, char* buffer, size_t capacity);

/* Why the calling thread's latest failing call failed ("" if none has). */
STRATA_GPU_EXPORT const char* strata_gpu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
