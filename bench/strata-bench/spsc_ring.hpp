// A bounded single-producer single-consumer queue of pointers, for handing blocks from
// the thread that allocates them to the thread that frees them.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <thread>

namespace strata_bench {

template <std::size_t Capacity>
class spsc_ring {
  static_assert((Capacity & (Capacity - 1)) == 0, "capacity must be a power of two");

 public:
  // Appends a pointer, waiting while the ring is full.
  void push(void* item) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    while (tail - head_.load(std::memory_order_acquire) == Capacity) std::this_thread::yield();
    slots_[tail & (Capacity - 1)] = item;
    tail_.store(tail + 1, std::memory_order_release);
  }

  // Removes the oldest pointer, waiting while the ring is empty.
  void* pop() {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    while (tail_.load(std::memory_order_acquire) == head) std::this_thread::yield();
    void* item = slots_[head & (Capacity - 1)];
    head_.store(head + 1, std::memory_order_release);
    return item;
  }

 private:
  std::array<void*, Capacity> slots_{};
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

}  // namespace strata_bench
