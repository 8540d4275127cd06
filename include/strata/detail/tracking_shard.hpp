// The tracking adaptor's records, split per thread: each thread that calls an
// adaptor records into a shard of its own (a side table of its own under a
// lock of its own), so the lock a call takes is never contended and lives in
// the calling thread's cache. A thread finds its shard of an adaptor through
// a one-entry thread-local cache keyed by the adaptor's unique id, then
// through its own list; only its first call to an adaptor takes the
// adaptor's registry lock. A thread that exits marks its shards abandoned and
// the next new thread adopts one; the records stay where they are, live.
// Each shard also counts the calls made through it, exactly: only the thread
// that holds the shard writes its counters (or whoever holds its lock, for the
// common shard that exiting threads share), so a count is a plain add, and a
// reader sums every shard's. A block freed on another thread is counted out
// there, so one shard may have more frees than allocations; the sums stay exact.
#ifndef STRATA_DETAIL_TRACKING_SHARD_HPP
#define STRATA_DETAIL_TRACKING_SHARD_HPP

#include <strata/address_table.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace strata::detail {

// One atomic flag: the owner's uncontended acquire is one exchange and its
// release one plain store, where std::mutex takes two read-modify-writes.
class shard_lock {
 public:
  void lock() noexcept {
    while (busy_.exchange(true, std::memory_order_acquire)) [[unlikely]] wait();
  }
  void unlock() noexcept { busy_.store(false, std::memory_order_release); }

 private:
  // Another thread holds it (a cross-thread free, a report): yield until free.
  [[gnu::cold, gnu::noinline]] void wait() noexcept {
    while (busy_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }

  std::atomic<bool> busy_{false};
};

// What a thread's exit and an adaptor's end need to know of a shard.
struct shard_state {
  std::atomic<bool> abandoned{false};  // its thread exited: a new thread may adopt it
  std::atomic<bool> orphaned{false};   // its adaptor is gone: the thread may forget it
};

// The calls counted through one shard: relaxed atomics that only one writer at
// a time updates, so readers on other threads see whole values. What is live
// is what was handed out less what came back, so a call updates two counters.
struct shard_counters {
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> allocated_bytes{0};
  std::atomic<std::uint64_t> frees{0};
  std::atomic<std::uint64_t> freed_bytes{0};

  // Count a block handed out: a load and a store each, no read-modify-write.
  void count_allocation(std::size_t bytes) noexcept {
    add(allocations, 1);
    add(allocated_bytes, bytes);
  }
  // Count a block given back.
  void count_free(std::size_t bytes) noexcept {
    add(frees, 1);
    add(freed_bytes, bytes);
  }

 private:
  // The single writer's add.
  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t delta) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  }
};

// The records one thread made through one adaptor (the thread's, or adopted),
// its counts and its sampler. What every call touches (the counts, the lock,
// the sampler's countdown) comes first, in one cache line; shard_state stays
// the first base, so the thread's cached pointer converts without an offset.
template <class Record>
struct alignas(64) tracking_shard : shard_state, shard_counters {
  shard_lock lock;
  bool lockless = false;     // sampled, and only its thread counts here: no lock taken
  long bytes_left = 0;       // sampled: bytes left before the next sample
  std::uint64_t random = 0;  // sampled: the random state that draws the gaps
  address_table<Record> live{256};
  std::uint64_t next_sequence = 0;
};

// The shards the calling thread holds, so its exit can abandon them.
class thread_shards {
 public:
  ~thread_shards() {
    exited = true;
    for (auto& entry : held_) entry.second->abandoned.store(true, std::memory_order_release);
  }

  // The shard this thread holds of adaptor `id`, or null.
  shard_state* find(std::uint64_t id) const noexcept {
    for (const auto& entry : held_)
      if (entry.first == id) return entry.second.get();
    return nullptr;
  }

  // Hold `shard` for adaptor `id`, forgetting shards of adaptors that are gone.
  void hold(std::uint64_t id, std::shared_ptr<shard_state> shard) {
    std::erase_if(held_, [](const auto& entry) {
      return entry.second->orphaned.load(std::memory_order_acquire);
    });
    held_.emplace_back(id, std::move(shard));
  }

  // Set once this thread's shards are abandoned: later calls use the common shard.
  static inline thread_local bool exited = false;

 private:
  std::vector<std::pair<std::uint64_t, std::shared_ptr<shard_state>>> held_;
};

// The calling thread's list of shards, made on its first use.
inline thread_shards& this_thread_shards() {
  static thread_local thread_shards shards;
  return shards;
}

// The last adaptor the calling thread used and its shard there: one compare.
struct last_shard {
  std::uint64_t id = 0;
  shard_state* shard = nullptr;
};
inline thread_local last_shard this_thread_last_shard;

// A unique id for each tracking adaptor (0 is never one).
inline std::atomic<std::uint64_t> next_tracking_id{1};

}  // namespace strata::detail

#endif  // STRATA_DETAIL_TRACKING_SHARD_HPP
