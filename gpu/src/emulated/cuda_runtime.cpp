// The CUDA runtime API over the simulated system: each call acts on the
// calling thread's current device, turns the simulator's device_error into
// CUDA's error codes (the simulator names the code it means in its message),
// and keeps CUDA's per-thread last error. Only what strata's CUDA backend and
// integration library call is here.
#include "emulated_runtime.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <exception>
#include <string>
#include <string_view>

namespace strata::gpu::emulated {

simulated_system& system() {
  static simulated_system* const shared = [] {
    simulated_config config;
    config.capacity = std::size_t{256} << 20;
    config.on_violation = violation_policy::record;
    return new simulated_system(device_count, config);
  }();
  return *shared;
}

namespace {

// CUDA's per-thread last error (cleared by cudaGetLastError), and the
// simulator's words for the thread's latest failure (kept for cudaGetErrorString).
thread_local cudaError_t last_error = cudaSuccess;
thread_local cudaError_t described = cudaSuccess;
thread_local std::string description;

// The codes the simulator names in its messages, "(cudaErrorXxx)".
struct named_code {
  std::string_view name;
  cudaError_t code;
};
constexpr named_code named_codes[] = {
    {"cudaErrorInvalidResourceHandle", cudaErrorInvalidResourceHandle},
    {"cudaErrorInvalidDevice", cudaErrorInvalidDevice},
    {"cudaErrorNotReady", cudaErrorNotReady},
    {"cudaErrorStreamCaptureUnsupported", cudaErrorStreamCaptureUnsupported},
    {"cudaErrorStreamCaptureInvalidated", cudaErrorStreamCaptureInvalidated},
    {"cudaErrorStreamCaptureUnmatched", cudaErrorStreamCaptureUnmatched},
    {"cudaErrorStreamCaptureIsolation", cudaErrorStreamCaptureIsolation},
    {"cudaErrorStreamCaptureImplicit", cudaErrorStreamCaptureImplicit},
    {"cudaErrorStreamCaptureWrongThread", cudaErrorStreamCaptureWrongThread},
};

// The code a failure stands for: the one its message names, else its kind's.
cudaError_t code_of(const device_error& e) {
  const std::string_view text = e.what();
  for (const named_code& n : named_codes)
    if (text.find(n.name) != std::string_view::npos) return n.code;
  switch (e.code()) {
    case errc::out_of_memory:
      return cudaErrorMemoryAllocation;
    case errc::invalid_argument:
      return cudaErrorInvalidValue;
    case errc::no_device:
      return cudaErrorNoDevice;
    case errc::capture:
      return cudaErrorStreamCaptureUnsupported;
    case errc::not_ready:
      return cudaErrorNotReady;
    case errc::backend:
      break;
  }
  return cudaErrorUnknown;
}

cudaError_t fail(cudaError_t code, std::string message) {
  last_error = code;
  described = code;
  description = std::move(message);
  return code;
}

// Run one call on the current device and answer in CUDA's terms.
template <class Call>
cudaError_t call(Call&& body) {
  try {
    body(system().gpu(system().current_device()));
    return cudaSuccess;
  } catch (const device_error& e) {
    return fail(code_of(e), e.what());
  } catch (const std::exception& e) {
    return fail(cudaErrorUnknown, e.what());
  }
}

stream as_stream(cudaStream_t s) {
  return stream{s};
}
event as_event(cudaEvent_t e) {
  return event{e};
}

// Memory pools are named by the device they belong to.
cudaMemPool_t pool_of(int device) {
  static int tags[device_count];
  return reinterpret_cast<cudaMemPool_t>(&tags[device]);
}

#if CUDART_VERSION >= 13000
memory_location as_location(const cudaMemLocation& location) {
  return location.type == cudaMemLocationTypeHost ? memory_location::host : memory_location::device;
}
#else
memory_location as_location(int device) {
  return device == cudaCpuDeviceId ? memory_location::host : memory_location::device;
}
#endif

memory_advice as_advice(cudaMemoryAdvise advice) {
  switch (advice) {
    case cudaMemAdviseSetReadMostly:
      return memory_advice::set_read_mostly;
    case cudaMemAdviseUnsetReadMostly:
      return memory_advice::unset_read_mostly;
    case cudaMemAdviseSetPreferredLocation:
      return memory_advice::set_preferred_location;
    case cudaMemAdviseUnsetPreferredLocation:
      return memory_advice::unset_preferred_location;
    case cudaMemAdviseSetAccessedBy:
      return memory_advice::set_accessed_by;
    default:
      return memory_advice::unset_accessed_by;
  }
}

copy_kind as_kind(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return copy_kind::host_to_device;
    case cudaMemcpyDeviceToHost:
      return copy_kind::device_to_host;
    default:
      return copy_kind::device_to_device;
  }
}

capture_mode as_mode(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeThreadLocal:
      return capture_mode::this_thread;
    case cudaStreamCaptureModeRelaxed:
      return capture_mode::relaxed;
    default:
      return capture_mode::global;
  }
}

cudaStreamCaptureMode as_native(capture_mode mode) {
  switch (mode) {
    case capture_mode::this_thread:
      return cudaStreamCaptureModeThreadLocal;
    case capture_mode::relaxed:
      return cudaStreamCaptureModeRelaxed;
    default:
      return cudaStreamCaptureModeGlobal;
  }
}

}  // namespace
}  // namespace strata::gpu::emulated

using namespace strata::gpu;
using namespace strata::gpu::emulated;

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  return last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  for (const named_code& n : named_codes)
    if (n.code == error) return n.name.data();
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    default:
      return "cudaErrorUnknown";
  }
}

// The simulator's own words for the thread's latest failure, when it is this one.
const char* cudaGetErrorString(cudaError_t error) {
  return error == described ? description.c_str() : cudaGetErrorName(error);
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = system().current_device();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  try {
    system().set_current_device(device);
    return cudaSuccess;
  } catch (const device_error& e) {
    return fail(cudaErrorInvalidDevice, e.what());
  }
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (device < 0 || device >= device_count) return fail(cudaErrorInvalidDevice, "no such device");
  *value = attribute == cudaDevAttrMemoryPoolsSupported ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  return call([&](simulated_device& d) { *p = d.allocate(bytes); });
}

// Device memory or managed memory: cudaFree takes both.
cudaError_t cudaFree(void* p) {
  return call([&](simulated_device& d) {
    try {
      d.deallocate(p);
    } catch (const device_error& e) {
      if (e.code() != errc::invalid_argument) throw;
      d.deallocate_managed(p);
    }
  });
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return call([&](simulated_device& d) { *p = d.allocate_pinned(bytes); });
}

cudaError_t cudaFreeHost(void* p) {
  return call([&](simulated_device& d) { d.deallocate_pinned(p); });
}

cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned int) {
  return call([&](simulated_device& d) { *p = d.allocate_managed(bytes); });
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* properties) {
  *pool = pool_of(properties->location.id);
  return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t) {
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr attribute, void* value) {
  if (attribute != cudaMemPoolAttrReleaseThreshold)
    return fail(cudaErrorInvalidValue, "only the release threshold is emulated");
  return call(
      [&](simulated_device& d) { d.set_release_threshold(*static_cast<std::uint64_t*>(value)); });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t keep) {
  return call([&](simulated_device& d) { d.trim_to(keep); });
}

cudaError_t cudaMallocFromPoolAsync(void** p, size_t bytes, cudaMemPool_t, cudaStream_t s) {
  return call([&](simulated_device& d) { *p = d.allocate_async(bytes, as_stream(s)); });
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  return call([&](simulated_device& d) { d.deallocate_async(p, as_stream(s)); });
}

#if CUDART_VERSION >= 13000
cudaError_t cudaMemPrefetchAsync(const void* p, size_t bytes, cudaMemLocation location,
                                 unsigned int, cudaStream_t s) {
  return call([&](simulated_device& d) {
    d.prefetch_async(p, bytes, as_location(location), as_stream(s));
  });
}

cudaError_t cudaMemAdvise(const void* p, size_t bytes, cudaMemoryAdvise advice,
                          cudaMemLocation location) {
  return call(
      [&](simulated_device& d) { d.advise(p, bytes, as_advice(advice), as_location(location)); });
}
#else
cudaError_t cudaMemPrefetchAsync(const void* p, size_t bytes, int device, cudaStream_t s) {
  return call(
      [&](simulated_device& d) { d.prefetch_async(p, bytes, as_location(device), as_stream(s)); });
}

cudaError_t cudaMemAdvise(const void* p, size_t bytes, cudaMemoryAdvise advice, int device) {
  return call(
      [&](simulated_device& d) { d.advise(p, bytes, as_advice(advice), as_location(device)); });
}
#endif

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  return call(
      [&](simulated_device& d) { *s = static_cast<cudaStream_t>(d.create_stream().handle); });
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return call([&](simulated_device& d) { d.destroy_stream(as_stream(s)); });
}

cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  return call([&](simulated_device& d) { *id = d.identify(as_stream(s)); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return call([&](simulated_device& d) { d.synchronize(as_stream(s)); });
}

cudaError_t cudaDeviceSynchronize(void) {
  return call([&](simulated_device& d) { d.synchronize(); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  const event_timing timing =
      (flags & cudaEventDisableTiming) != 0 ? event_timing::disabled : event_timing::enabled;
  return call(
      [&](simulated_device& d) { *e = static_cast<cudaEvent_t>(d.create_event(timing).handle); });
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  return call([&](simulated_device& d) { d.destroy_event(as_event(e)); });
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  return call([&](simulated_device& d) { d.record(as_event(e), as_stream(s)); });
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  bool done = false;
  const cudaError_t status = call([&](simulated_device& d) { done = d.query(as_event(e)); });
  if (status != cudaSuccess) return status;
  return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return call([&](simulated_device& d) { d.synchronize(as_event(e)); });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  return call([&](simulated_device& d) { d.wait(as_stream(s), as_event(e)); });
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
  return call([&](simulated_device& d) {
    *milliseconds = static_cast<float>(d.elapsed(as_event(start), as_event(end)).count()) / 1e6f;
  });
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  return call([&](simulated_device& d) { d.begin_capture(as_stream(s), as_mode(mode)); });
}

// The simulator's captured graph is already executable: one handle serves as both.
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* captured) {
  return call([&](simulated_device& d) {
    *captured = static_cast<cudaGraph_t>(d.end_capture(as_stream(s)).handle);
  });
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* executable, cudaGraph_t captured,
                                 unsigned long long) {
  *executable = reinterpret_cast<cudaGraphExec_t>(captured);
  return cudaSuccess;
}

// The executable holds the work; the captured graph has nothing of its own to free.
cudaError_t cudaGraphDestroy(cudaGraph_t) {
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t executable, cudaStream_t s) {
  return call([&](simulated_device& d) { d.launch(graph{executable}, as_stream(s)); });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t executable) {
  return call([&](simulated_device& d) { d.destroy_graph(graph{executable}); });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  return call([&](simulated_device& d) {
    switch (d.capture_state(as_stream(s))) {
      case capture_status::active:
        *status = cudaStreamCaptureStatusActive;
        break;
      case capture_status::invalidated:
        *status = cudaStreamCaptureStatusInvalidated;
        break;
      case capture_status::none:
        *status = cudaStreamCaptureStatusNone;
        break;
    }
  });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  *mode = as_native(system().exchange_capture_mode(as_mode(*mode)));
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s) {
  return call(
      [&](simulated_device& d) { d.copy_async(dst, src, bytes, as_kind(kind), as_stream(s)); });
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  return call([&](simulated_device& d) { d.memset_async(p, value, bytes, as_stream(s)); });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user_data) {
  return call([&](simulated_device& d) {
    d.launch_host(as_stream(s), [fn, user_data] { fn(user_data); });
  });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return call([&](simulated_device& d) {
    const memory_info info = d.memory();
    *free = info.free;
    *total = info.total;
  });
}

}  // extern "C"
