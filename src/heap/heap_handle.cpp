// Generations of heap handles: one counter for every heap, so a heap remade at
// the address of a destroyed one gets a handle the old one never had.
#include "heap/heap_handle.hpp"

#include <atomic>

namespace strata::heap {
namespace {

std::atomic<std::uint16_t> last_generation{0};

}  // namespace

// Called as a heap is made, before its handle is given out.
void heap_issue_handle(heap* h) noexcept {
  std::uint16_t generation = 0;
  while (generation == 0) generation = ++last_generation;  // 0 would read as no handle
  h->handle =
      reinterpret_cast<std::uintptr_t>(h) | (std::uintptr_t{generation} << handle_generation_shift);
}

}  // namespace strata::heap
