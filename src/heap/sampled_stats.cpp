// The samplers' blocks in the heap's statistics (see sampled_stats.hpp).
#include "heap/sampled_stats.hpp"

#include <atomic>
#include <cstdint>

#include "heap/heap_internal.hpp"
#include "heap/size_class.hpp"
#include "heap/stats_internal.hpp"
#include "os/os.hpp"

namespace strata::heap {

namespace {

// Per class as the heap counts them; the last entry counts blocks above the classes.
std::atomic<std::uint64_t> mallocs[class_count + 1];
std::atomic<std::uint64_t> frees[class_count + 1];
std::atomic<std::size_t> huge_bytes{0};
std::atomic<std::uint64_t> cross_thread_frees{0};

// The class the heap would count the request in: in debug mode its blocks
// also hold their size record, so a request may take the next class.
std::size_t class_index(std::size_t size) noexcept {
  std::size_t need = debug_mode() ? size + debug_record_bytes : size;
  return need <= medium_max ? size_class_of(need) : class_count;
}

// What strata_usable_size answers for a sampled block: the size rounded up to 16 bytes.
std::size_t usable(std::size_t size) noexcept {
  return size == 0 ? 16 : (size + 15) & ~std::size_t{15};
}

// The pages the block can touch: a sampled block starts or ends on a page boundary.
std::size_t committed_pages(std::size_t size) noexcept {
  std::size_t page = os::page_size();
  return (usable(size) + page - 1) & ~(page - 1);
}

}  // namespace

void sampled_stats_malloc(std::size_t size, std::size_t reserved) noexcept {
  std::size_t c = class_index(size);
  mallocs[c].fetch_add(1, std::memory_order_relaxed);
  if (c == class_count) huge_bytes.fetch_add(usable(size), std::memory_order_relaxed);
  global_stats::reserved.fetch_add(reserved, std::memory_order_relaxed);
  global_stats::commit(committed_pages(size));
}

void sampled_stats_free(std::size_t size, std::size_t reserved, bool other_thread) noexcept {
  std::size_t c = class_index(size);
  frees[c].fetch_add(1, std::memory_order_relaxed);
  if (other_thread) cross_thread_frees.fetch_add(1, std::memory_order_relaxed);
  if (c == class_count) huge_bytes.fetch_sub(usable(size), std::memory_order_relaxed);
  global_stats::reserved.fetch_sub(reserved, std::memory_order_relaxed);
  global_stats::uncommit(committed_pages(size));
}

void sampled_stats_reserve(std::size_t bytes) noexcept {
  global_stats::reserved.fetch_add(bytes, std::memory_order_relaxed);
}

void sampled_stats_add(strata_stats_t* out) noexcept {
  for (std::size_t c = 0; c <= class_count; ++c) {
    // Frees read first: a block freed between the two reads is not counted live.
    std::uint64_t freed = frees[c].load(std::memory_order_relaxed);
    std::uint64_t made = mallocs[c].load(std::memory_order_relaxed);
    out->mallocs += made;
    out->frees += freed;
    if (c == class_count) break;
    out->class_mallocs[c] += made;
    out->class_frees[c] += freed;
    if (made > freed) out->in_use += (made - freed) * class_block_size(c);
  }
  out->huge_in_use += huge_bytes.load(std::memory_order_relaxed);
  out->cross_thread_frees += cross_thread_frees.load(std::memory_order_relaxed);
}

}  // namespace strata::heap
