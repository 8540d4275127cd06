// The sampled heap profiler (see profiler.hpp): the drawn block's mapping and
// its record.
#include "profile/profiler.hpp"

#include <strata/detail/poisson_sampler.hpp>

#include <climits>
#include <cmath>
#include <cstdlib>

#include "options/options.hpp"
#include "os/os.hpp"
#include "profile/dump.hpp"
#include "profile/table.hpp"
#include "stack/frames.hpp"

namespace strata::profile {

namespace {

double rate = 512 * 1024;
std::size_t unit_bytes = 0;

}  // namespace

// Whole units: a heap segment may leave the end of its unit unmapped, so a
// mapping of any other size could land in a unit free takes for the heap's.
// Only the pages the block uses are ever touched.
std::size_t mapped_bytes(std::size_t size) noexcept {
  return size == 0 ? unit_bytes : (size + unit_bytes - 1) / unit_bytes * unit_bytes;
}

bool start(std::size_t unit) noexcept {
  const char* path = std::getenv("STRATA_PROFILE");
  bool leaks = options::get(STRATA_OPTION_PROFILE_LEAKS) != 0;
  if ((path == nullptr || *path == 0) && !leaks) return false;
  if (!table_start()) return false;
  rate = static_cast<double>(options::get(STRATA_OPTION_PROFILE_RATE));
  unit_bytes = unit;
  dump_start(path, leaks, static_cast<int>(options::get(STRATA_OPTION_PROFILE_SIGNAL)), rate);
  return true;
}

// The shared Poisson gap (detail/poisson_sampler.hpp) at the profile's rate.
long next_gap(std::uint64_t uniform) noexcept {
  return detail::poisson_gap(uniform, rate);
}

// A mapping of its own keeps the sample out of strata's segments, so free
// finds it on the path for pointers that are not strata's, and unsampled
// frees pay nothing. Its stack skips this function and the sampling hook.
void* allocate(std::size_t size) noexcept {
  if (size > SIZE_MAX - unit_bytes) return nullptr;
  void* p = os::reserve_aligned(mapped_bytes(size), unit_bytes, true);
  if (p == nullptr) return nullptr;
  stack::frames frames;
  stack::capture(frames, 2);
  if (!table_insert(reinterpret_cast<std::uintptr_t>(p), size, detail::poisson_weight(size, rate),
                    frames, stack::kernel_thread_id())) {
    os::release(p, mapped_bytes(size));
    return nullptr;
  }
  return p;
}

std::size_t release(void* p, bool* other_thread) noexcept {
  std::uint32_t thread = 0;
  std::size_t size = table_erase(reinterpret_cast<std::uintptr_t>(p), &thread);
  if (size == 0) return 0;
  os::release(p, mapped_bytes(size));
  *other_thread = thread != stack::kernel_thread_id();
  return size;
}

// What was asked for rounded up to 16 bytes, as every strata block is.
std::size_t usable_size(const void* p) noexcept {
  std::size_t size = table_size(reinterpret_cast<std::uintptr_t>(p));
  return (size + 15) & ~std::size_t{15};
}

}  // namespace strata::profile
