#include "driver_memory.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace strata::gpu::cuda {

namespace {

using reserve_call = CUresult(CUDAAPI*)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr,
                                        unsigned long long);
using address_free_call = CUresult(CUDAAPI*)(CUdeviceptr, std::size_t);
using create_call = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle*, std::size_t,
                                       const CUmemAllocationProp*, unsigned long long);
using release_call = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle);
using map_call = CUresult(CUDAAPI*)(CUdeviceptr, std::size_t, std::size_t,
                                    CUmemGenericAllocationHandle, unsigned long long);
using set_access_call = CUresult(CUDAAPI*)(CUdeviceptr, std::size_t, const CUmemAccessDesc*,
                                           std::size_t);
using unmap_call = CUresult(CUDAAPI*)(CUdeviceptr, std::size_t);
using granularity_call = CUresult(CUDAAPI*)(std::size_t*, const CUmemAllocationProp*,
                                            CUmemAllocationGranularity_flags);

// The driver's functions, looked up once.
struct entry_points {
  reserve_call reserve = nullptr;
  address_free_call address_free = nullptr;
  create_call create = nullptr;
  release_call release = nullptr;
  map_call map = nullptr;
  set_access_call set_access = nullptr;
  unmap_call unmap = nullptr;
  granularity_call granularity = nullptr;
};

// One symbol, in the form CUDA 12.0 gave it (these calls have not changed since).
template <class Call>
void look_up(const char* symbol, Call& out) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  const cudaError_t error =
      cudaGetDriverEntryPointByVersion(symbol, &found, 12000, cudaEnableDefault, &status);
#else
  const cudaError_t error = cudaGetDriverEntryPoint(symbol, &found, cudaEnableDefault, &status);
#endif
  if (error != cudaSuccess || status != cudaDriverEntryPointSuccess || found == nullptr) {
    static_cast<void>(cudaGetLastError());
    throw device_error(errc::backend, std::string("the CUDA driver has no ") + symbol +
                                          " (virtual memory management is unsupported)");
  }
  out = reinterpret_cast<Call>(found);
}

// Looked up on first use; a failed lookup is tried again next time.
const entry_points& driver() {
  static std::mutex mutex;
  static entry_points points;
  static bool loaded = false;
  std::lock_guard lock(mutex);
  if (!loaded) {
    entry_points found;
    look_up("cuMemAddressReserve", found.reserve);
    look_up("cuMemAddressFree", found.address_free);
    look_up("cuMemCreate", found.create);
    look_up("cuMemRelease", found.release);
    look_up("cuMemMap", found.map);
    look_up("cuMemSetAccess", found.set_access);
    look_up("cuMemUnmap", found.unmap);
    look_up("cuMemGetAllocationGranularity", found.granularity);
    points = found;
    loaded = true;
  }
  return points;
}

// Throw for a refused call, out of memory kept apart.
void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  errc code = errc::backend;
  if (status == CUDA_ERROR_OUT_OF_MEMORY) code = errc::out_of_memory;
  if (status == CUDA_ERROR_INVALID_VALUE || status == CUDA_ERROR_INVALID_HANDLE)
    code = errc::invalid_argument;
  if (status == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) code = errc::capture;
  throw device_error(code, std::string(call) + " failed (CUresult " +
                               std::to_string(static_cast<int>(status)) + ")");
}

// Ordinary device memory of device `ordinal`.
CUmemAllocationProp pinned_on(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  return prop;
}

CUdeviceptr address(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace

std::size_t granularity(int ordinal) {
  const CUmemAllocationProp prop = pinned_on(ordinal);
  std::size_t bytes = 0;
  check(driver().granularity(&bytes, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  return bytes;
}

void* reserve(std::size_t bytes) {
  CUdeviceptr p = 0;
  check(driver().reserve(&p, bytes, 0, 0, 0), "cuMemAddressReserve");
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

void release(void* base, std::size_t bytes) {
  check(driver().address_free(address(base), bytes), "cuMemAddressFree");
}

physical_memory create(int ordinal, std::size_t bytes) {
  const CUmemAllocationProp prop = pinned_on(ordinal);
  CUmemGenericAllocationHandle handle = 0;
  check(driver().create(&handle, bytes, &prop, 0), "cuMemCreate");
  return physical_memory{handle};
}

void release(physical_memory memory) {
  check(driver().release(memory.handle), "cuMemRelease");
}

void map(void* p, std::size_t bytes, physical_memory memory) {
  check(driver().map(address(p), bytes, 0, memory.handle, 0), "cuMemMap");
}

void set_access(int ordinal, void* p, std::size_t bytes) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(driver().set_access(address(p), bytes, &access, 1), "cuMemSetAccess");
}

void unmap(void* p, std::size_t bytes) {
  check(driver().unmap(address(p), bytes), "cuMemUnmap");
}

}  // namespace strata::gpu::cuda
