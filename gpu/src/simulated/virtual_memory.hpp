// The simulated device's virtual memory (CUDA's cuMemAddressReserve family):
// reservations of address space, physical memory in handles, and mappings of
// handles into reservations with their access. The rules are the driver's:
// sizes and addresses are multiples of the granularity, a mapping goes into
// unmapped space of one reservation, only whole mappings unmap, a reservation
// goes back once nothing in it is mapped, and a handle's memory goes back once
// it is released and no mapping uses it. Queued work that touches a
// reservation where nothing accessible is mapped is a violation.
//
// Every reservation is its own PROT_NONE mapping of the host's address space;
// with host backing, set_access makes a mapped range readable and writable and
// unmap throws its bytes away, so queued work can write and verify patterns.
#ifndef STRATA_GPU_SIMULATED_VIRTUAL_MEMORY_HPP
#define STRATA_GPU_SIMULATED_VIRTUAL_MEMORY_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace strata::gpu::simulated {

class virtual_memory {
 public:
  // `granularity` is a power of two and a multiple of the host's page.
  virtual_memory(std::size_t granularity, bool host_backed);
  ~virtual_memory();
  virtual_memory(const virtual_memory&) = delete;
  virtual_memory& operator=(const virtual_memory&) = delete;

  std::size_t granularity() const noexcept { return granularity_; }

  // Address space only; invalid_argument for a size that is not a granule multiple.
  void* reserve(std::size_t bytes);
  void release(void* base, std::size_t bytes);
  // A new handle of `bytes` (the caller has taken them from the capacity).
  std::uint64_t create(std::size_t bytes);
  // Release a handle: the bytes that go back to the capacity now (0 while mapped).
  std::size_t release_handle(std::uint64_t handle);
  void map(void* p, std::size_t bytes, std::uint64_t handle);
  void set_access(void* p, std::size_t bytes);
  // The bytes of released handles whose last mapping this was.
  std::size_t unmap(void* p, std::size_t bytes);

  // Whether `p` lies in a reservation.
  bool contains(const void* p) const;

  // Run `touch` unless [p, p + bytes) (or [q, q + bytes)) reaches into a
  // reservation where nothing accessible is mapped; no mapping changes while
  // it runs. The refusal's reason otherwise.
  template <class Touch>
  std::optional<std::string> touch(const void* p, const void* q, std::size_t bytes, Touch&& run) {
    std::lock_guard lock(mutex_);
    for (const void* at : {p, q})
      if (at != nullptr)
        if (auto why = refuse(at, bytes)) return why;
    run();
    return std::nullopt;
  }

 private:
  struct mapping {
    std::size_t bytes;
    std::uint64_t handle;
    bool accessible;
  };
  struct chunk {
    std::size_t bytes;
    std::size_t mappings;
    bool released;
  };

  // invalid_argument unless `p` and `bytes` are granule multiples and bytes > 0.
  void check_aligned(const void* p, std::size_t bytes, const char* call) const;
  // The reservation holding all of [p, p + bytes), or end().
  std::map<std::uintptr_t, std::size_t>::const_iterator reservation_of(std::uintptr_t p,
                                                                       std::size_t bytes) const;
  // Why [p, p + bytes) may not be touched, when it may not (mutex held).
  std::optional<std::string> refuse(const void* p, std::size_t bytes) const;

  std::size_t granularity_;
  bool host_backed_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> reservations_;  // base -> bytes
  std::map<std::uintptr_t, mapping> mappings_;          // start -> mapping
  std::unordered_map<std::uint64_t, chunk> chunks_;
  std::uint64_t next_handle_ = 1;
};

}  // namespace strata::gpu::simulated

#endif
