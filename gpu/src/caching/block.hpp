// strata GPU caching allocator, private: a block is a piece of a segment,
// linked to its neighbours so free neighbours merge back; a pool's free blocks
// are ordered so the best fit on a stream is one search away.
#ifndef STRATA_GPU_SRC_CACHING_BLOCK_HPP
#define STRATA_GPU_SRC_CACHING_BLOCK_HPP

#include <strata/gpu/device.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

namespace strata::gpu::caching {

enum class pool_kind : std::uint8_t { small, large };

// A stream as the allocator keeps it. Its id is what it is (blocks are keyed
// by it, so a recycled handle or another thread's per-thread stream is never
// taken for it); its handle is how to name it when recording an event, which
// for a per-thread stream only its own thread can do. The settled stream (id
// 0) holds blocks no queued work uses any more: any stream may take them.
struct stream_ref {
  stream_id id = 0;
  stream handle{};
  std::thread::id thread{};  // a per-thread stream's thread

  bool settled() const noexcept { return id == 0; }
  friend bool operator==(const stream_ref& a, const stream_ref& b) noexcept { return a.id == b.id; }
};

// Which pool a segment serves: 0 the allocator's own, else a graph pool's number.
using pool_number = std::uint32_t;

struct block {
  // A free block of `bytes` at `at`, cached with (or taken for) stream `s`.
  block(char* at, std::size_t bytes, const stream_ref& s, pool_kind k, pool_number p)
      : ptr(at), size(bytes), on(s), kind(k), pool(p) {}

  char* ptr;
  std::size_t size;
  stream_ref on;  // allocated on, then freed on: the stream whose order protects it
  pool_kind kind;
  pool_number pool;
  bool allocated = false;
  int pending_events = 0;     // events on other streams still to complete after a free
  std::size_t requested = 0;  // what the caller asked for, while handed out
  block* prev = nullptr;      // neighbours in the segment
  block* next = nullptr;
  std::uint64_t freed_at = 0;    // when it last became free, for garbage collection
  std::vector<stream_ref> uses;  // other streams recorded with record_stream

  // Whether the segment is cut into more than this block.
  bool split() const noexcept { return prev != nullptr || next != nullptr; }
  // Whether it is in its pool's free set.
  bool cached() const noexcept { return !allocated && pending_events == 0; }
};

// Where a block sorts among the free ones: pool, stream, then size, then address.
struct block_key {
  pool_number pool;
  stream_id stream;
  std::size_t size;
  std::uintptr_t address;
};

// The key of a pool, stream and size, before every block of that size.
inline block_key key_of(pool_number pool, stream_id s, std::size_t size) noexcept {
  return {pool, s, size, 0};
}

// The key a free block sorts by.
inline block_key key_of(const block* b) noexcept {
  return {b->pool, b->on.id, b->size, reinterpret_cast<std::uintptr_t>(b->ptr)};
}

// The key itself, so the comparator takes keys and blocks alike.
inline block_key key_of(const block_key& k) noexcept {
  return k;
}

// Orders blocks and keys alike, so a search needs no block to compare with.
struct block_order {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept {
    const block_key x = key_of(a);
    const block_key y = key_of(b);
    return std::tie(x.pool, x.stream, x.size, x.address) <
           std::tie(y.pool, y.stream, y.size, y.address);
  }
};

using free_blocks = std::set<block*, block_order>;

}  // namespace strata::gpu::caching

#endif
