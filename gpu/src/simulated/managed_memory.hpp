// The simulated device's managed (unified) memory: host memory with a
// residency per page, so the cost of migration, and what prefetch and advice
// save, show without a GPU.
//
// Pages (managed_model::page_bytes, 64 KiB like the driver's migration unit)
// start on neither side. A touch from a side a page is not on moves it there
// and costs a fault (fault_migration); the host's first touch of a fresh page
// is an ordinary page fault and costs nothing extra. Prefetch moves pages ahead
// at prefetch_migration each. Read-mostly pages keep a copy on each side that
// reads them (a write drops the other copy); pages preferred on the host, or
// accessed_by the touching side, are reached remotely without moving.
// Costs are returned, not spent, so the caller spends them outside its locks.
#ifndef STRATA_GPU_SIMULATED_MANAGED_MEMORY_HPP
#define STRATA_GPU_SIMULATED_MANAGED_MEMORY_HPP

#include <strata/gpu/simulated.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace strata::gpu::simulated {

class managed_memory {
 public:
  explicit managed_memory(managed_model model);
  ~managed_memory();
  managed_memory(const managed_memory&) = delete;
  managed_memory& operator=(const managed_memory&) = delete;

  // Fresh pages on neither side; null when the host has no memory.
  void* allocate(std::size_t bytes);
  // False when `p` is not an allocation of this space.
  bool release(void* p);
  // The bytes of the allocation that starts at `p` (whole pages), or 0 when none does.
  std::size_t size_of(const void* p);
  // Whether [p, p + bytes) lies inside one managed allocation.
  bool contains(const void* p, std::size_t bytes);

  // A touch from `side` (a write drops the other side's copy); the time it costs.
  // Ranges outside managed memory cost nothing.
  std::chrono::nanoseconds touch(const void* p, std::size_t bytes, memory_location side,
                                 bool write);
  // Move the range's pages to `to`; the time it costs.
  std::chrono::nanoseconds prefetch(const void* p, std::size_t bytes, memory_location to);
  void advise(const void* p, std::size_t bytes, memory_advice advice, memory_location where);

  residency at(const void* p);
  managed_statistics statistics();

 private:
  struct page {
    std::uint8_t resident = 0;  // residency bits: 1 host, 2 device
    std::uint8_t hints = 0;     // hint bits, see managed_memory.cpp
  };
  struct allocation {
    std::size_t bytes;
    std::vector<page> pages;
  };

  // The pages [p, p + bytes) covers inside its allocation, or null when it is not managed.
  std::pair<page*, page*> pages_of(const void* p, std::size_t bytes);
  // Move one page to `side` by a touch; the cost.
  std::chrono::nanoseconds touch_page(page& pg, memory_location side, bool write);

  const managed_model model_;
  std::mutex mutex_;
  std::map<std::uintptr_t, allocation> allocations_;  // start -> allocation
  managed_statistics stats_;
};

}  // namespace strata::gpu::simulated

#endif
