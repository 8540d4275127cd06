// The CUDA driver's virtual-memory calls over the simulated system, handed
// out by the emulated runtime's driver entry points (the CUDA backend looks
// them up there, never linking libcuda). Each acts on the calling thread's
// current device and answers with the driver's codes.
#include "emulated_runtime.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <exception>

namespace strata::gpu::emulated {

namespace {

// The driver's code for a refusal of the simulator.
CUresult code_of(const device_error& e) {
  switch (e.code()) {
    case errc::out_of_memory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case errc::invalid_argument:
      return CUDA_ERROR_INVALID_VALUE;
    case errc::capture:
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    default:
      return CUDA_ERROR_UNKNOWN;
  }
}

// Run one call on the current device and answer in the driver's terms.
template <class Call>
CUresult driver_call(Call&& body) {
  try {
    body(system().gpu(system().current_device()));
    return CUDA_SUCCESS;
  } catch (const device_error& e) {
    return code_of(e);
  } catch (const std::exception&) {
    return CUDA_ERROR_UNKNOWN;
  }
}

void* pointer(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

// Physical memory is device memory of the device the properties name.
bool on_a_device(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id >= 0 &&
         prop->location.id < device_count;
}

CUresult CUDAAPI address_reserve(CUdeviceptr* p, std::size_t bytes, std::size_t alignment,
                                 CUdeviceptr hint, unsigned long long flags) {
  if (p == nullptr || alignment != 0 || hint != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver_call([&](simulated_device& d) {
    *p = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(d.reserve_address(bytes)));
  });
}

CUresult CUDAAPI address_free(CUdeviceptr p, std::size_t bytes) {
  return driver_call([&](simulated_device& d) { d.release_address(pointer(p), bytes); });
}

CUresult CUDAAPI create(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                        const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || !on_a_device(prop) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  try {
    *handle = system().gpu(prop->location.id).create_physical(bytes).handle;
    return CUDA_SUCCESS;
  } catch (const device_error& e) {
    return code_of(e);
  }
}

CUresult CUDAAPI release(CUmemGenericAllocationHandle handle) {
  return driver_call([&](simulated_device& d) { d.release_physical(physical_memory{handle}); });
}

// Whole handles from their start only: strata maps nothing else.
CUresult CUDAAPI map(CUdeviceptr p, std::size_t bytes, std::size_t offset,
                     CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (offset != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return driver_call(
      [&](simulated_device& d) { d.map(pointer(p), bytes, physical_memory{handle}); });
}

// Read and write for the current device is all the simulator models.
CUresult CUDAAPI set_access(CUdeviceptr p, std::size_t bytes, const CUmemAccessDesc* access,
                            std::size_t count) {
  if (access == nullptr || count != 1 || access->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      access->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
      access->location.id != system().current_device())
    return CUDA_ERROR_INVALID_VALUE;
  return driver_call([&](simulated_device& d) { d.set_access(pointer(p), bytes); });
}

CUresult CUDAAPI unmap(CUdeviceptr p, std::size_t bytes) {
  return driver_call([&](simulated_device& d) { d.unmap(pointer(p), bytes); });
}

CUresult CUDAAPI granularity(std::size_t* bytes, const CUmemAllocationProp* prop,
                             CUmemAllocationGranularity_flags) {
  if (bytes == nullptr || !on_a_device(prop)) return CUDA_ERROR_INVALID_VALUE;
  try {
    *bytes = system().gpu(prop->location.id).vm_granularity();
    return CUDA_SUCCESS;
  } catch (const device_error& e) {
    return code_of(e);
  }
}

struct entry_point {
  const char* symbol;
  void* function;
};

// The driver functions the emulation provides, by their CUDA names.
const entry_point entry_points[] = {
    {"cuMemAddressReserve", reinterpret_cast<void*>(&address_reserve)},
    {"cuMemAddressFree", reinterpret_cast<void*>(&address_free)},
    {"cuMemCreate", reinterpret_cast<void*>(&create)},
    {"cuMemRelease", reinterpret_cast<void*>(&release)},
    {"cuMemMap", reinterpret_cast<void*>(&map)},
    {"cuMemSetAccess", reinterpret_cast<void*>(&set_access)},
    {"cuMemUnmap", reinterpret_cast<void*>(&unmap)},
    {"cuMemGetAllocationGranularity", reinterpret_cast<void*>(&granularity)},
};

// A symbol the emulation lacks is "not found", as the runtime reports it.
cudaError_t find_entry_point(const char* symbol, void** function,
                             cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return cudaErrorInvalidValue;
  *function = nullptr;
  for (const entry_point& e : entry_points)
    if (std::strcmp(e.symbol, symbol) == 0) *function = e.function;
  if (status != nullptr)
    *status =
        *function != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

}  // namespace
}  // namespace strata::gpu::emulated

extern "C" {

#if CUDART_VERSION >= 12050
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  return strata::gpu::emulated::find_entry_point(symbol, function, status);
}
#else
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** function, unsigned long long,
                                    cudaDriverEntryPointQueryResult* status) {
  return strata::gpu::emulated::find_entry_point(symbol, function, status);
}
#endif

}  // extern "C"
