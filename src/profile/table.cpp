// The profiler's tables (see table.hpp): open addressing with linear probing
// in both, records erased by shifting their successors back (no tombstones).
#include "profile/table.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "os/os.hpp"

namespace strata::profile {

namespace {

// A live sample: its block's address (0: an empty slot), size, weight, bucket
// and the kernel id of the thread that allocated it.
struct record {
  std::uintptr_t address;
  std::size_t size;
  weight w;
  std::uint32_t bucket;
  std::uint32_t thread;
};

// 2^17 record slots hold up to 3/4 of that many live samples: 48 GiB of live
// heap at the default rate. 2^14 distinct stacks; past that, samples share
// the last bucket, whose stack is empty.
constexpr std::size_t record_slots = std::size_t{1} << 17;
constexpr std::size_t record_limit = record_slots / 4 * 3;
constexpr std::size_t bucket_slots = std::size_t{1} << 14;
constexpr std::size_t bucket_limit = bucket_slots / 4 * 3;

record* records = nullptr;
std::size_t record_count = 0;
bucket* buckets = nullptr;              // open-addressed by stack hash
std::uint32_t* bucket_order = nullptr;  // the slots in use, in the order first seen
std::size_t bucket_count = 0;
bucket* packed = nullptr;  // what table_lock hands out: the buckets in use, contiguous

// The lock: the owning thread's id, 0 when free (a spin that yields: held only
// for a table update or a dump).
std::atomic<std::uintptr_t> owner{0};

void lock() noexcept {
  std::uintptr_t none = 0;
  while (!owner.compare_exchange_weak(none, os::thread_id(), std::memory_order_acquire)) {
    none = 0;
    sched_yield();
  }
}

void unlock() noexcept {
  owner.store(0, std::memory_order_release);
}

std::size_t address_slot(std::uintptr_t address) noexcept {
  return (address >> 4) * 0x9e3779b97f4a7c15 >> (64 - 17);
}

std::uint64_t hash_of(const stack::frames& s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325 ^ s.count;
  for (std::uint32_t i = 0; i < s.count; ++i)
    h = (h ^ reinterpret_cast<std::uintptr_t>(s.pc[i])) * 0x100000001b3;
  return h | 1;  // never 0, which marks an empty slot
}

bool same_stack(const stack::frames& a, const stack::frames& b) noexcept {
  return a.count == b.count && std::memcmp(a.pc, b.pc, a.count * sizeof(void*)) == 0;
}

// The bucket slot for `s`, claimed when new; the overflow bucket (an empty
// stack) once the table is three quarters full.
std::uint32_t bucket_for(const stack::frames& s) noexcept {
  stack::frames none;
  const stack::frames& key = bucket_count < bucket_limit ? s : none;
  std::uint64_t h = hash_of(key);
  for (std::size_t i = h % bucket_slots;; i = (i + 1) % bucket_slots) {
    bucket& b = buckets[i];
    if (b.hash == h && same_stack(b.stack, key)) return static_cast<std::uint32_t>(i);
    if (b.hash == 0) {
      b.hash = h;
      b.stack.count = key.count;
      std::memcpy(b.stack.pc, key.pc, key.count * sizeof(void*));
      bucket_order[bucket_count++] = static_cast<std::uint32_t>(i);
      return static_cast<std::uint32_t>(i);
    }
  }
}

// The slot holding `address`, or record_slots.
std::size_t find(std::uintptr_t address) noexcept {
  for (std::size_t i = address_slot(address);; i = (i + 1) % record_slots) {
    if (records[i].address == address) return i;
    if (records[i].address == 0) return record_slots;
  }
}

void* map(std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

bool table_start() noexcept {
  records = static_cast<record*>(map(record_slots * sizeof(record)));
  buckets = static_cast<bucket*>(map(bucket_slots * sizeof(bucket)));
  bucket_order = static_cast<std::uint32_t*>(map(bucket_slots * sizeof(std::uint32_t)));
  packed = static_cast<bucket*>(map(bucket_slots * sizeof(bucket)));
  return records != nullptr && buckets != nullptr && bucket_order != nullptr && packed != nullptr;
}

bool table_insert(std::uintptr_t address, std::size_t size, weight w, const stack::frames& stack,
                  std::uint32_t thread) noexcept {
  lock();
  bool room = record_count < record_limit;
  if (room) {
    std::uint32_t b = bucket_for(stack);
    buckets[b].allocated.count += w.count;
    buckets[b].allocated.bytes += w.bytes;
    buckets[b].live.count += w.count;
    buckets[b].live.bytes += w.bytes;
    std::size_t i = address_slot(address);
    while (records[i].address != 0) i = (i + 1) % record_slots;
    records[i] = record{address, size, w, b, thread};
    ++record_count;
  }
  unlock();
  return room;
}

std::size_t table_erase(std::uintptr_t address, std::uint32_t* thread) noexcept {
  lock();
  std::size_t i = find(address);
  std::size_t size = 0;
  if (i != record_slots) {
    record& r = records[i];
    size = r.size;
    *thread = r.thread;
    buckets[r.bucket].live.count -= r.w.count;
    buckets[r.bucket].live.bytes -= r.w.bytes;
    // Shift back every later record of the run that may sit at or before slot i.
    for (std::size_t j = (i + 1) % record_slots; records[j].address != 0;
         j = (j + 1) % record_slots) {
      std::size_t home = address_slot(records[j].address);
      bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        records[i] = records[j];
        i = j;
      }
    }
    records[i] = record{};
    --record_count;
  }
  unlock();
  return size;
}

std::size_t table_size(std::uintptr_t address) noexcept {
  lock();
  std::size_t i = find(address);
  std::size_t size = i == record_slots ? 0 : records[i].size;
  unlock();
  return size;
}

const bucket* table_lock(std::size_t* count) noexcept {
  lock();
  for (std::size_t i = 0; i < bucket_count; ++i) packed[i] = buckets[bucket_order[i]];
  *count = bucket_count;
  return packed;
}

void table_unlock() noexcept {
  unlock();
}

bool table_held_here() noexcept {
  return owner.load(std::memory_order_relaxed) == os::thread_id();
}

void table_fork_prepare() noexcept {
  lock();
}

// In the child the lock's owner is the forking thread's id (a TLS address,
// the same in the child), so releasing it works in both processes.
void table_fork_after() noexcept {
  unlock();
}

}  // namespace strata::profile
