// The GPU layer's side of the memory ledger (strata/ledger.hpp): how a ledger
// entry asks the device its memory is on for that device's own view.
#ifndef STRATA_GPU_LEDGER_SOURCE_HPP
#define STRATA_GPU_LEDGER_SOURCE_HPP

#include <strata/gpu/device.hpp>
#include <strata/ledger.hpp>

namespace strata::gpu {

namespace detail {

// cudaMemGetInfo through the device API; a device that cannot answer reports nothing.
inline ledger_device_memory read_device_memory(const void* dev) {
  try {
    memory_info info = static_cast<device*>(const_cast<void*>(dev))->memory();
    return {info.free, info.total};
  } catch (...) {
    return {};
  }
}

}  // namespace detail

// The ledger's handle on `dev`: entries on one device share it.
inline ledger_device_source ledger_source_of(device& dev) noexcept {
  return {&dev, dev.ordinal(), dev.backend_name(), &detail::read_device_memory};
}

}  // namespace strata::gpu

#endif
