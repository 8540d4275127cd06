#include "virtual_memory.hpp"

#include <strata/gpu/error.hpp>

#include <sys/mman.h>

#include <cstdio>
#include <iterator>

namespace strata::gpu::simulated {

namespace {

[[noreturn]] void throw_invalid(const std::string& what) {
  throw device_error(errc::invalid_argument, what);
}

std::uintptr_t address_of(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// Inaccessible, unbacked address space for `bytes` at `at` (MAP_FIXED when given).
void* fresh_range(void* at, std::size_t bytes) {
  const int fixed = at != nullptr ? MAP_FIXED : 0;
  return ::mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
}

}  // namespace

// A granularity the host's pages cannot back is the configuration's error.
virtual_memory::virtual_memory(std::size_t granularity, bool host_backed)
    : granularity_(granularity), host_backed_(host_backed) {
  if (granularity < 4096 || (granularity & (granularity - 1)) != 0)
    throw_invalid(
        "simulated_config::vm_granularity must be a power of two of at least 4 KiB, not " +
        std::to_string(granularity));
}

virtual_memory::~virtual_memory() {
  for (const auto& [base, bytes] : reservations_) ::munmap(reinterpret_cast<void*>(base), bytes);
}

// Misaligned sizes and addresses are the caller's error, as the driver's CUDA_ERROR_INVALID_VALUE.
void virtual_memory::check_aligned(const void* p, std::size_t bytes, const char* call) const {
  if (bytes == 0 || bytes % granularity_ != 0 || address_of(p) % granularity_ != 0) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "%s of %zu bytes at %p: not a multiple of the granularity (%zu bytes)", call,
                  bytes, p, granularity_);
    throw_invalid(text);
  }
}

// Over-reserve by a granule and trim, so the base is a granule multiple.
void* virtual_memory::reserve(std::size_t bytes) {
  check_aligned(nullptr, bytes, "reserve_address");
  void* raw = fresh_range(nullptr, bytes + granularity_);
  if (raw == MAP_FAILED)
    throw device_error(errc::out_of_memory,
                       "reserve_address of " + std::to_string(bytes) + " bytes: no address space");
  const std::uintptr_t start = address_of(raw);
  const std::uintptr_t base = (start + granularity_ - 1) & ~(granularity_ - 1);
  if (base != start) ::munmap(raw, base - start);
  if (const std::size_t tail = start + granularity_ - base; tail != 0)
    ::munmap(reinterpret_cast<void*>(base + bytes), tail);
  std::lock_guard lock(mutex_);
  reservations_.emplace(base, bytes);
  return reinterpret_cast<void*>(base);
}

// A whole reservation, with nothing mapped in it.
void virtual_memory::release(void* base, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const auto it = reservations_.find(address_of(base));
  if (it == reservations_.end() || it->second != bytes)
    throw_invalid("release_address of a range that is not a whole reservation");
  const auto mapped = mappings_.lower_bound(it->first);
  if (mapped != mappings_.end() && mapped->first < it->first + it->second)
    throw_invalid("release_address of a reservation that still has mappings (unmap them first)");
  ::munmap(base, bytes);
  reservations_.erase(it);
}

std::uint64_t virtual_memory::create(std::size_t bytes) {
  check_aligned(nullptr, bytes, "create_physical");
  std::lock_guard lock(mutex_);
  chunks_.emplace(next_handle_, chunk{bytes, 0, false});
  return next_handle_++;
}

// The memory stays while a mapping uses it (cuMemRelease's rule).
std::size_t virtual_memory::release_handle(std::uint64_t handle) {
  std::lock_guard lock(mutex_);
  const auto it = chunks_.find(handle);
  if (it == chunks_.end() || it->second.released)
    throw_invalid("release_physical of an unknown or released handle");
  if (it->second.mappings != 0) {
    it->second.released = true;
    return 0;
  }
  const std::size_t bytes = it->second.bytes;
  chunks_.erase(it);
  return bytes;
}

std::map<std::uintptr_t, std::size_t>::const_iterator virtual_memory::reservation_of(
    std::uintptr_t p, std::size_t bytes) const {
  auto it = reservations_.upper_bound(p);
  if (it == reservations_.begin()) return reservations_.end();
  --it;
  if (p + bytes > it->first + it->second) return reservations_.end();
  return it;
}

// Into unmapped space of one reservation, a whole handle of that size.
void virtual_memory::map(void* p, std::size_t bytes, std::uint64_t handle) {
  check_aligned(p, bytes, "map");
  std::lock_guard lock(mutex_);
  const std::uintptr_t start = address_of(p);
  if (reservation_of(start, bytes) == reservations_.end())
    throw_invalid("map outside a reservation (or across its end)");
  const auto it = chunks_.find(handle);
  if (it == chunks_.end() || it->second.released)
    throw_invalid("map of an unknown or released handle");
  if (it->second.bytes != bytes) throw_invalid("map of a size other than the handle's");
  auto next = mappings_.lower_bound(start);
  const bool overlaps_next = next != mappings_.end() && next->first < start + bytes;
  const bool overlaps_prev =
      next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > start;
  if (overlaps_next || overlaps_prev) throw_invalid("map over memory already mapped");
  mappings_.emplace(start, mapping{bytes, handle, false});
  ++it->second.mappings;
}

// Every granule of the range must be mapped; host backing opens the bytes.
void virtual_memory::set_access(void* p, std::size_t bytes) {
  check_aligned(p, bytes, "set_access");
  std::lock_guard lock(mutex_);
  const std::uintptr_t start = address_of(p);
  std::uintptr_t at = start;
  auto it = mappings_.find(start);
  for (; at < start + bytes && it != mappings_.end() && it->first == at; ++it)
    at += it->second.bytes;
  if (at < start + bytes) throw_invalid("set_access of a range that is not all mapped");
  if (at > start + bytes) throw_invalid("set_access of part of a mapping");
  for (it = mappings_.find(start); it != mappings_.end() && it->first < start + bytes; ++it)
    it->second.accessible = true;
  if (host_backed_ && ::mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0)
    throw device_error(errc::out_of_memory, "set_access: the host cannot back the range");
}

// Whole mappings only; their bytes are gone (fresh, inaccessible address space).
std::size_t virtual_memory::unmap(void* p, std::size_t bytes) {
  check_aligned(p, bytes, "unmap");
  std::lock_guard lock(mutex_);
  const std::uintptr_t start = address_of(p);
  std::uintptr_t at = start;
  auto it = mappings_.find(start);
  const auto first = it;
  for (; at < start + bytes && it != mappings_.end() && it->first == at; ++it)
    at += it->second.bytes;
  if (at != start + bytes) throw_invalid("unmap of a range that is not whole mappings");
  std::size_t freed = 0;
  for (auto gone = first; gone != it; ++gone) {
    chunk& c = chunks_.at(gone->second.handle);
    if (--c.mappings == 0 && c.released) {
      freed += c.bytes;
      chunks_.erase(gone->second.handle);
    }
  }
  mappings_.erase(first, it);
  fresh_range(p, bytes);
  return freed;
}

bool virtual_memory::contains(const void* p) const {
  std::lock_guard lock(mutex_);
  return reservation_of(address_of(p), 1) != reservations_.end();
}

// Each byte of the range that falls in a reservation must be mapped and accessible.
std::optional<std::string> virtual_memory::refuse(const void* p, std::size_t bytes) const {
  if (reservations_.empty()) return std::nullopt;
  const std::uintptr_t start = address_of(p);
  const std::uintptr_t end = start + bytes;
  auto r = reservations_.upper_bound(start);
  if (r != reservations_.begin()) --r;
  for (; r != reservations_.end() && r->first < end; ++r) {
    const std::uintptr_t from = std::max(start, r->first);
    const std::uintptr_t to = std::min(end, r->first + r->second);
    if (from >= to) continue;
    std::uintptr_t at = from;
    auto m = mappings_.upper_bound(at);
    if (m != mappings_.begin()) --m;
    for (; at < to && m != mappings_.end(); ++m) {
      if (m->first > at) break;
      if (m->first + m->second.bytes <= at) continue;
      if (!m->second.accessible) {
        char text[128];
        std::snprintf(text, sizeof text, "%p is mapped but not accessible (no set_access)",
                      reinterpret_cast<void*>(at));
        return text;
      }
      at = m->first + m->second.bytes;
    }
    if (at < to) {
      char text[128];
      std::snprintf(text, sizeof text, "%p is reserved but not mapped",
                    reinterpret_cast<void*>(at));
      return text;
    }
  }
  return std::nullopt;
}

}  // namespace strata::gpu::simulated
