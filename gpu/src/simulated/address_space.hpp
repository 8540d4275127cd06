// Address-only device memory: a reserved, inaccessible range of the address
// space handed out first-fit, so a device far larger than RAM can be rehearsed.
// Nothing in the range is ever mapped, so a stray dereference faults.
#ifndef STRATA_GPU_SIMULATED_ADDRESS_SPACE_HPP
#define STRATA_GPU_SIMULATED_ADDRESS_SPACE_HPP

#include <cstddef>
#include <cstdint>
#include <map>

namespace strata::gpu::simulated {

class address_space {
 public:
  // Reserve `bytes` of address space; throws device_error when it cannot.
  explicit address_space(std::size_t bytes);
  ~address_space();
  address_space(const address_space&) = delete;
  address_space& operator=(const address_space&) = delete;

  // A range of `bytes` (a multiple of the caller's granularity), or null.
  void* take(std::size_t bytes);
  void give_back(void* p, std::size_t bytes);
  bool contains(const void* p) const noexcept;

 private:
  std::uintptr_t base_ = 0;
  std::size_t size_ = 0;
  std::map<std::uintptr_t, std::size_t> free_;  // start -> length, coalesced
};

}  // namespace strata::gpu::simulated

#endif
