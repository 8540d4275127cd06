#include <strata/gpu/cuda.hpp>

#include "driver_memory.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#if CUDART_VERSION < 12000
#error \
    "strata's CUDA backend needs CUDA 12.0 or later (cudaStreamGetId, cudaGraphInstantiate's flags form)"
#endif

namespace strata::gpu {

namespace {

// Sort a CUDA error into the layer's codes; out of memory stays distinct.
errc classify(cudaError_t status) {
  switch (status) {
    case cudaErrorMemoryAllocation:
      return errc::out_of_memory;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidDevice:
      return errc::invalid_argument;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return errc::no_device;
    case cudaErrorNotReady:
      return errc::not_ready;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureWrongThread:
    case cudaErrorCapturedEvent:
      return errc::capture;
    default:
      return errc::backend;
  }
}

// Throw for a failed call, clearing the runtime's last error so later calls
// do not report it again.
void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  static_cast<void>(cudaGetLastError());
  throw device_error(classify(status), std::string(call) + ": " + cudaGetErrorName(status) + " (" +
                                           cudaGetErrorString(status) + ")");
}

cudaStream_t native(stream s) {
  return static_cast<cudaStream_t>(s.handle);
}
cudaEvent_t native(event e) {
  return static_cast<cudaEvent_t>(e.handle);
}
cudaGraphExec_t native(graph g) {
  return static_cast<cudaGraphExec_t>(g.handle);
}

cudaMemcpyKind native(copy_kind kind) {
  switch (kind) {
    case copy_kind::host_to_device:
      return cudaMemcpyHostToDevice;
    case copy_kind::device_to_host:
      return cudaMemcpyDeviceToHost;
    case copy_kind::device_to_device:
      return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

cudaMemoryAdvise native(memory_advice advice) {
  switch (advice) {
    case memory_advice::set_read_mostly:
      return cudaMemAdviseSetReadMostly;
    case memory_advice::unset_read_mostly:
      return cudaMemAdviseUnsetReadMostly;
    case memory_advice::set_preferred_location:
      return cudaMemAdviseSetPreferredLocation;
    case memory_advice::unset_preferred_location:
      return cudaMemAdviseUnsetPreferredLocation;
    case memory_advice::set_accessed_by:
      return cudaMemAdviseSetAccessedBy;
    case memory_advice::unset_accessed_by:
      return cudaMemAdviseUnsetAccessedBy;
  }
  return cudaMemAdviseSetReadMostly;
}

cudaStreamCaptureMode native(capture_mode mode) {
  switch (mode) {
    case capture_mode::global:
      return cudaStreamCaptureModeGlobal;
    case capture_mode::this_thread:
      return cudaStreamCaptureModeThreadLocal;
    case capture_mode::relaxed:
      return cudaStreamCaptureModeRelaxed;
  }
  return cudaStreamCaptureModeGlobal;
}

// The first exception a host function let out, for the next synchronisation.
struct host_error_slot {
  std::mutex mutex;
  std::string message;

  void keep(std::string text) {
    std::lock_guard lock(mutex);
    if (message.empty()) message = std::move(text);
  }
};

// What cudaLaunchHostFunc carries: the work, and where its exception goes.
struct host_call {
  host_work work;
  std::shared_ptr<host_error_slot> errors;
};

// cudaLaunchHostFunc takes a C function, and an exception must not cross the
// driver: run the work, keep what it throws, free the call.
void CUDART_CB run_host_work(void* argument) noexcept {
  std::unique_ptr<host_call> call(static_cast<host_call*>(argument));
  try {
    call->work();
  } catch (const std::exception& e) {
    call->errors->keep(std::string("a host function threw: ") + e.what());
  } catch (...) {
    call->errors->keep("a host function threw a non-standard exception");
  }
}

// The runtime's current device is per thread, and the caller (PyTorch, CuPy,
// another device object) keeps its own: bind this device for one call and put
// the caller's back after it.
class bound_device {
 public:
  explicit bound_device(int ordinal) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != ordinal) {
      check(cudaSetDevice(ordinal), "cudaSetDevice");
      restore_ = true;
    }
  }
  bound_device(const bound_device&) = delete;
  bound_device& operator=(const bound_device&) = delete;
  ~bound_device() {
    if (restore_ && cudaSetDevice(previous_) != cudaSuccess) static_cast<void>(cudaGetLastError());
  }

 private:
  int previous_ = 0;
  bool restore_ = false;
};

class cuda_device final : public device {
 public:
  explicit cuda_device(int ordinal)
      : ordinal_(ordinal), host_errors_(std::make_shared<host_error_slot>()) {
    if (ordinal < 0 || ordinal >= cuda_device_count())
      throw device_error(errc::no_device, "no CUDA device " + std::to_string(ordinal));
  }

  // The pool goes with its last allocation (cudaMemPoolDestroy waits for none).
  ~cuda_device() override {
    if (pool_ != nullptr && cudaMemPoolDestroy(pool_) != cudaSuccess)
      static_cast<void>(cudaGetLastError());
  }

  const char* backend_name() const noexcept override { return "cuda"; }
  int ordinal() const noexcept override { return ordinal_; }

  void* allocate(std::size_t bytes) override {
    bound_device bind(ordinal_);
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }

  void deallocate(void* p) override {
    bound_device bind(ordinal_);
    check(cudaFree(p), "cudaFree");
  }

  void* allocate_async(std::size_t bytes, stream s) override {
    bound_device bind(ordinal_);
    void* p = nullptr;
    check(cudaMallocFromPoolAsync(&p, bytes, own_pool(), native(s)), "cudaMallocFromPoolAsync");
    return p;
  }

  void deallocate_async(void* p, stream s) override {
    bound_device bind(ordinal_);
    check(cudaFreeAsync(p, native(s)), "cudaFreeAsync");
  }

  void set_release_threshold(std::size_t bytes) override {
    bound_device bind(ordinal_);
    std::uint64_t threshold = bytes;
    check(cudaMemPoolSetAttribute(own_pool(), cudaMemPoolAttrReleaseThreshold, &threshold),
          "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  }

  void trim_to(std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaMemPoolTrimTo(own_pool(), bytes), "cudaMemPoolTrimTo");
  }

  // The driver's calls act on the current context: cudaSetDevice makes the
  // device's primary context current (and creates it) even when the device
  // is already the current one.
  std::size_t vm_granularity() override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    return cuda::granularity(ordinal_);
  }

  void* reserve_address(std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    return cuda::reserve(bytes);
  }

  void release_address(void* base, std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda::release(base, bytes);
  }

  physical_memory create_physical(std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    return cuda::create(ordinal_, bytes);
  }

  void release_physical(physical_memory memory) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda::release(memory);
  }

  void map(void* p, std::size_t bytes, physical_memory memory) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda::map(p, bytes, memory);
  }

  void set_access(void* p, std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda::set_access(ordinal_, p, bytes);
  }

  void unmap(void* p, std::size_t bytes) override {
    bound_device bind(ordinal_);
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    cuda::unmap(p, bytes);
  }

  void* allocate_pinned(std::size_t bytes) override {
    bound_device bind(ordinal_);
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    return p;
  }

  void deallocate_pinned(void* p) override {
    bound_device bind(ordinal_);
    check(cudaFreeHost(p), "cudaFreeHost");
  }

  void* allocate_managed(std::size_t bytes) override {
    bound_device bind(ordinal_);
    void* p = nullptr;
    if (bytes != 0) check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "cudaMallocManaged");
    return p;
  }

  void deallocate_managed(void* p) override {
    bound_device bind(ordinal_);
    check(cudaFree(p), "cudaFree");
  }

  // CUDA 13 names the destination with cudaMemLocation; 12.x with a device
  // number, cudaCpuDeviceId for the host.
  void prefetch_async(const void* p, std::size_t bytes, memory_location to, stream s) override {
    bound_device bind(ordinal_);
#if CUDART_VERSION >= 13000
    check(cudaMemPrefetchAsync(p, bytes, location(to), 0, native(s)), "cudaMemPrefetchAsync");
#else
    check(cudaMemPrefetchAsync(p, bytes, device_number(to), native(s)), "cudaMemPrefetchAsync");
#endif
  }

  void advise(const void* p, std::size_t bytes, memory_advice advice,
              memory_location where) override {
    bound_device bind(ordinal_);
#if CUDART_VERSION >= 13000
    check(cudaMemAdvise(p, bytes, native(advice), location(where)), "cudaMemAdvise");
#else
    check(cudaMemAdvise(p, bytes, native(advice), device_number(where)), "cudaMemAdvise");
#endif
  }

  // The GPU's page faults migrate managed pages: nothing to announce.
  void host_access(const void*, std::size_t) override {}

  stream create_stream() override {
    bound_device bind(ordinal_);
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return stream{s};
  }

  void destroy_stream(stream s) override {
    if (s.is_legacy() || s.is_per_thread())
      throw device_error(errc::invalid_argument, "a default stream cannot be destroyed");
    bound_device bind(ordinal_);
    check(cudaStreamDestroy(native(s)), "cudaStreamDestroy");
  }

  // The legacy and per-thread handles resolve against the bound device.
  stream_id identify(stream s) override {
    bound_device bind(ordinal_);
    unsigned long long id = 0;
    check(cudaStreamGetId(native(s), &id), "cudaStreamGetId");
    return id;
  }

  void synchronize(stream s) override {
    {
      bound_device bind(ordinal_);
      check(cudaStreamSynchronize(native(s)), "cudaStreamSynchronize");
    }
    rethrow_host_error();
  }

  void synchronize() override {
    {
      bound_device bind(ordinal_);
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    rethrow_host_error();
  }

  using device::create_event;
  event create_event(event_timing timing) override {
    bound_device bind(ordinal_);
    cudaEvent_t e = nullptr;
    const unsigned flags =
        timing == event_timing::enabled ? cudaEventDefault : cudaEventDisableTiming;
    check(cudaEventCreateWithFlags(&e, flags), "cudaEventCreateWithFlags");
    return event{e};
  }

  void destroy_event(event e) override {
    bound_device bind(ordinal_);
    check(cudaEventDestroy(native(e)), "cudaEventDestroy");
  }

  void record(event e, stream s) override {
    bound_device bind(ordinal_);
    check(cudaEventRecord(native(e), native(s)), "cudaEventRecord");
  }

  bool query(event e) override {
    bound_device bind(ordinal_);
    const cudaError_t status = cudaEventQuery(native(e));
    if (status == cudaErrorNotReady) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    check(status, "cudaEventQuery");
    return true;
  }

  void synchronize(event e) override {
    {
      bound_device bind(ordinal_);
      check(cudaEventSynchronize(native(e)), "cudaEventSynchronize");
    }
    rethrow_host_error();
  }

  void wait(stream s, event e) override {
    bound_device bind(ordinal_);
    check(cudaStreamWaitEvent(native(s), native(e), 0), "cudaStreamWaitEvent");
  }

  std::chrono::nanoseconds elapsed(event start, event end) override {
    bound_device bind(ordinal_);
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, native(start), native(end)), "cudaEventElapsedTime");
    return std::chrono::nanoseconds(static_cast<std::int64_t>(milliseconds * 1e6));
  }

  void begin_capture(stream s, capture_mode mode) override {
    bound_device bind(ordinal_);
    check(cudaStreamBeginCapture(native(s), native(mode)), "cudaStreamBeginCapture");
  }

  // The captured graph is instantiated at once and only the executable kept.
  graph end_capture(stream s) override {
    bound_device bind(ordinal_);
    cudaGraph_t captured = nullptr;
    check(cudaStreamEndCapture(native(s), &captured), "cudaStreamEndCapture");
    cudaGraphExec_t executable = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&executable, captured, 0);
    static_cast<void>(cudaGraphDestroy(captured));
    check(status, "cudaGraphInstantiate");
    return graph{executable};
  }

  capture_status capture_state(stream s) override {
    bound_device bind(ordinal_);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(native(s), &status), "cudaStreamIsCapturing");
    switch (status) {
      case cudaStreamCaptureStatusActive:
        return capture_status::active;
      case cudaStreamCaptureStatusInvalidated:
        return capture_status::invalidated;
      default:
        return capture_status::none;
    }
  }

  void launch(graph g, stream s) override {
    bound_device bind(ordinal_);
    check(cudaGraphLaunch(native(g), native(s)), "cudaGraphLaunch");
  }

  void destroy_graph(graph g) override {
    bound_device bind(ordinal_);
    check(cudaGraphExecDestroy(native(g)), "cudaGraphExecDestroy");
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind,
                  stream s) override {
    bound_device bind(ordinal_);
    check(cudaMemcpyAsync(dst, src, bytes, native(kind), native(s)), "cudaMemcpyAsync");
  }

  void memset_async(void* p, int value, std::size_t bytes, stream s) override {
    bound_device bind(ordinal_);
    check(cudaMemsetAsync(p, value, bytes, native(s)), "cudaMemsetAsync");
  }

  void launch_host(stream s, host_work work) override {
    if (!work) throw device_error(errc::invalid_argument, "launch_host without work");
    bound_device bind(ordinal_);
    auto call = std::make_unique<host_call>(host_call{std::move(work), host_errors_});
    check(cudaLaunchHostFunc(native(s), run_host_work, call.get()), "cudaLaunchHostFunc");
    static_cast<void>(call.release());
  }

  memory_info memory() override {
    bound_device bind(ordinal_);
    memory_info info;
    check(cudaMemGetInfo(&info.free, &info.total), "cudaMemGetInfo");
    return info;
  }

 private:
#if CUDART_VERSION >= 13000
  // The host, or this device.
  cudaMemLocation location(memory_location where) const {
    cudaMemLocation l{};
    l.type = where == memory_location::host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    l.id = where == memory_location::host ? 0 : ordinal_;
    return l;
  }
#else
  int device_number(memory_location where) const {
    return where == memory_location::host ? cudaCpuDeviceId : ordinal_;
  }
#endif

  // A stream-ordered pool of strata's own, made on first use: the device's
  // default pool is shared with PyTorch and CuPy, whose release threshold
  // strata must not change. A device without pools fails here, not on opening.
  cudaMemPool_t own_pool() {
    std::lock_guard lock(pool_mutex_);
    if (pool_ != nullptr) return pool_;
    int supported = 0;
    check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, ordinal_),
          "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolsSupported)");
    if (supported == 0)
      throw device_error(errc::backend, "CUDA device " + std::to_string(ordinal_) +
                                            " has no stream-ordered memory pools");
    cudaMemPoolProps properties{};
    properties.allocType = cudaMemAllocationTypePinned;
    properties.handleTypes = cudaMemHandleTypeNone;
    properties.location.type = cudaMemLocationTypeDevice;
    properties.location.id = ordinal_;
    check(cudaMemPoolCreate(&pool_, &properties), "cudaMemPoolCreate");
    return pool_;
  }

  // A host function's exception surfaces at the next synchronisation.
  void rethrow_host_error() {
    std::string message;
    {
      std::lock_guard lock(host_errors_->mutex);
      message.swap(host_errors_->message);
    }
    if (!message.empty()) throw device_error(errc::backend, message);
  }

  int ordinal_;
  std::shared_ptr<host_error_slot> host_errors_;
  std::mutex pool_mutex_;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace

// A failing count (no driver, no device) means none.
int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

// The only way to make the backend: callers see the device interface alone.
std::unique_ptr<device> make_cuda_device(int ordinal) {
  return std::make_unique<cuda_device>(ordinal);
}

}  // namespace strata::gpu
