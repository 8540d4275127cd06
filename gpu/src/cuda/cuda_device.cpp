#include <strata/gpu/cuda.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

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

// cudaLaunchHostFunc takes a C function: it runs the work and frees it.
void CUDART_CB run_host_work(void* argument) {
  std::unique_ptr<host_work> work(static_cast<host_work*>(argument));
  (*work)();
}

class cuda_device final : public device {
 public:
  // Bind the device and fetch its default pool, the one cudaMallocAsync draws from.
  explicit cuda_device(int ordinal) : ordinal_(ordinal) {
    if (ordinal < 0 || ordinal >= cuda_device_count())
      throw device_error(errc::no_device, "no CUDA device " + std::to_string(ordinal));
    bind();
    check(cudaDeviceGetDefaultMemPool(&pool_, ordinal_), "cudaDeviceGetDefaultMemPool");
  }

  const char* backend_name() const noexcept override { return "cuda"; }

  void* allocate(std::size_t bytes) override {
    bind();
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }

  void deallocate(void* p) override {
    bind();
    check(cudaFree(p), "cudaFree");
  }

  void* allocate_async(std::size_t bytes, stream s) override {
    bind();
    void* p = nullptr;
    check(cudaMallocAsync(&p, bytes, native(s)), "cudaMallocAsync");
    return p;
  }

  void deallocate_async(void* p, stream s) override {
    bind();
    check(cudaFreeAsync(p, native(s)), "cudaFreeAsync");
  }

  void set_release_threshold(std::size_t bytes) override {
    std::uint64_t threshold = bytes;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
          "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  }

  void trim_to(std::size_t bytes) override {
    check(cudaMemPoolTrimTo(pool_, bytes), "cudaMemPoolTrimTo");
  }

  void* allocate_pinned(std::size_t bytes) override {
    bind();
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    return p;
  }

  void deallocate_pinned(void* p) override {
    bind();
    check(cudaFreeHost(p), "cudaFreeHost");
  }

  void* allocate_managed(std::size_t bytes) override {
    bind();
    void* p = nullptr;
    if (bytes != 0) check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "cudaMallocManaged");
    return p;
  }

  void deallocate_managed(void* p) override {
    bind();
    check(cudaFree(p), "cudaFree");
  }

  void prefetch_async(const void* p, std::size_t bytes, memory_location to, stream s) override {
    check(cudaMemPrefetchAsync(p, bytes, location(to), 0, native(s)), "cudaMemPrefetchAsync");
  }

  void advise(const void* p, std::size_t bytes, memory_advice advice,
              memory_location where) override {
    check(cudaMemAdvise(p, bytes, native(advice), location(where)), "cudaMemAdvise");
  }

  // The GPU's page faults migrate managed pages: nothing to announce.
  void host_access(const void*, std::size_t) override {}

  stream create_stream() override {
    bind();
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return stream{s};
  }

  void destroy_stream(stream s) override {
    if (s.handle == nullptr)
      throw device_error(errc::invalid_argument, "the default stream cannot be destroyed");
    check(cudaStreamDestroy(native(s)), "cudaStreamDestroy");
  }

  void synchronize(stream s) override {
    check(cudaStreamSynchronize(native(s)), "cudaStreamSynchronize");
  }

  void synchronize() override {
    bind();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  event create_event() override {
    bind();
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return event{e};
  }

  void destroy_event(event e) override { check(cudaEventDestroy(native(e)), "cudaEventDestroy"); }

  void record(event e, stream s) override {
    check(cudaEventRecord(native(e), native(s)), "cudaEventRecord");
  }

  bool query(event e) override {
    const cudaError_t status = cudaEventQuery(native(e));
    if (status == cudaErrorNotReady) {
      static_cast<void>(cudaGetLastError());
      return false;
    }
    check(status, "cudaEventQuery");
    return true;
  }

  void synchronize(event e) override {
    check(cudaEventSynchronize(native(e)), "cudaEventSynchronize");
  }

  void wait(stream s, event e) override {
    check(cudaStreamWaitEvent(native(s), native(e), 0), "cudaStreamWaitEvent");
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind,
                  stream s) override {
    check(cudaMemcpyAsync(dst, src, bytes, native(kind), native(s)), "cudaMemcpyAsync");
  }

  void memset_async(void* p, int value, std::size_t bytes, stream s) override {
    check(cudaMemsetAsync(p, value, bytes, native(s)), "cudaMemsetAsync");
  }

  void launch_host(stream s, host_work work) override {
    if (!work) throw device_error(errc::invalid_argument, "launch_host without work");
    auto owned = std::make_unique<host_work>(std::move(work));
    check(cudaLaunchHostFunc(native(s), run_host_work, owned.get()), "cudaLaunchHostFunc");
    static_cast<void>(owned.release());
  }

  memory_info memory() override {
    bind();
    memory_info info;
    check(cudaMemGetInfo(&info.free, &info.total), "cudaMemGetInfo");
    return info;
  }

 private:
  // The host, or this device.
  cudaMemLocation location(memory_location where) const {
    cudaMemLocation l{};
    l.type = where == memory_location::host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    l.id = where == memory_location::host ? 0 : ordinal_;
    return l;
  }

  // The runtime's current device is per thread, and other code (PyTorch, CuPy)
  // changes it: ask the runtime each time (a cheap thread-local read) rather than
  // remember what this device last set.
  void bind() const {
    int current = -1;
    check(cudaGetDevice(&current), "cudaGetDevice");
    if (current != ordinal_) check(cudaSetDevice(ordinal_), "cudaSetDevice");
  }

  int ordinal_;
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
