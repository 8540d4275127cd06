// Size-bucketed free lists over chunks mapped from the OS.
#include "heap/metadata.hpp"

#include <cstdint>
#include <mutex>

#include "os/mutex.hpp"
#include "os/os.hpp"

namespace strata::heap {
namespace {

constexpr std::size_t chunk_size = std::size_t{1} << 20;
constexpr std::size_t granule = 64;        // cache-line aligned objects
constexpr std::size_t bucket_count = 256;  // objects up to 16 KiB

struct free_object {
  free_object* next;
};

struct metadata_pool {
  os::mutex lock;
  free_object* buckets[bucket_count] = {};
  std::uint8_t* bump = nullptr;
  std::uint8_t* end = nullptr;
};
metadata_pool pool;

std::size_t bucket_of(std::size_t size) {
  return (size + granule - 1) / granule;
}

}  // namespace

void* metadata_allocate(std::size_t size) noexcept {
  std::size_t bucket = bucket_of(size);
  if (bucket >= bucket_count) return nullptr;
  std::lock_guard<os::mutex> guard(pool.lock);
  if (free_object* obj = pool.buckets[bucket]) {
    pool.buckets[bucket] = obj->next;
    return obj;
  }
  std::size_t bytes = bucket * granule;
  if (pool.bump == nullptr || static_cast<std::size_t>(pool.end - pool.bump) < bytes) {
    auto* chunk =
        static_cast<std::uint8_t*>(os::reserve_aligned(chunk_size, os::page_size(), true));
    if (chunk == nullptr) return nullptr;
    pool.bump = chunk;
    pool.end = chunk + chunk_size;
  }
  void* p = pool.bump;
  pool.bump += bytes;
  return p;
}

void metadata_free(void* p, std::size_t size) noexcept {
  std::size_t bucket = bucket_of(size);
  std::lock_guard<os::mutex> guard(pool.lock);
  auto* obj = static_cast<free_object*>(p);
  obj->next = pool.buckets[bucket];
  pool.buckets[bucket] = obj;
}

void metadata_lock() noexcept {
  pool.lock.lock();
}
void metadata_unlock() noexcept {
  pool.lock.unlock();
}

}  // namespace strata::heap
