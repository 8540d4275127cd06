// The shadow model every fuzz target checks its allocator against: the live
// blocks by address, each filled with a pattern of its id. It checks that a
// new block overlaps no live one and is aligned, and that a block's bytes are
// still its own when it is freed; any violation traps, so libFuzzer reports it.
#ifndef STRATA_FUZZ_SHADOW_HPP
#define STRATA_FUZZ_SHADOW_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <vector>

// The shadow's own byte loops need no coverage feedback: leaving them out keeps
// the fuzzer's time on the allocator.
#if defined(__clang__)
#define STRATA_FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else  // GCC: replayed without libFuzzer (replay_main.cpp), no coverage to leave out
#define STRATA_FUZZ_NO_COVERAGE
#endif

namespace strata::fuzz {

// Print what broke and stop: the fuzzer saves the input that got here.
[[noreturn]] inline void fail(const char* what, const void* p, std::size_t value = 0) {
  std::fprintf(stderr, "fuzz: %s (address %p, value %zu)\n", what, p, value);
  std::abort();
}

inline void check(bool ok, const char* what, const void* p = nullptr, std::size_t value = 0) {
  if (!ok) [[unlikely]]
    fail(what, p, value);
}

struct live_block {
  std::size_t bytes;
  std::uint64_t id;
  unsigned owner;  // which heap, pool or session; the target's choice
};

class shadow {
 public:
  // Bytes patterned at each end of a large block; blocks up to twice this are
  // patterned whole.
  static constexpr std::size_t pattern_span = 512;

  // Record a new block: aligned, overlapping no live block; fill its pattern.
  std::uint64_t add(const void* p, std::size_t bytes, std::size_t alignment, unsigned owner = 0) {
    check(p != nullptr, "a successful allocation returned null");
    auto address = reinterpret_cast<std::uintptr_t>(p);
    check(alignment == 0 || address % alignment == 0, "block not aligned", p, alignment);
    std::size_t extent = bytes == 0 ? 1 : bytes;
    auto next = live_.lower_bound(address);
    if (next != live_.end())
      check(next->first >= address + extent, "block overlaps the next live block", p, bytes);
    if (next != live_.begin()) {
      auto before = std::prev(next);
      check(before->first + std::max<std::size_t>(before->second.bytes, 1) <= address,
            "block overlaps the previous live block", p, bytes);
    }
    std::uint64_t id = ++last_id_;
    live_[address] = {bytes, id, owner};
    fill(const_cast<void*>(p), bytes, id);
    live_bytes_ += bytes;
    return id;
  }

  // Check a block's pattern and forget it; its bytes were `bytes` long.
  void remove(const void* p) {
    auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
    check(it != live_.end(), "freeing a block the shadow does not know", p);
    verify(p, it->second.bytes, it->second.id);
    live_bytes_ -= it->second.bytes;
    live_.erase(it);
  }

  // Forget a block without reading it (realloc freed or moved it); returns
  // what the shadow knew of it.
  live_block take_out(const void* p) {
    auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
    check(it != live_.end(), "taking out a block the shadow does not know", p);
    live_block block = it->second;
    live_bytes_ -= block.bytes;
    live_.erase(it);
    return block;
  }

  // Check every live block's pattern.
  void verify_all() const {
    for (const auto& [address, block] : live_)
      verify(reinterpret_cast<void*>(address), block.bytes, block.id);
  }

  // The i-th live block (i below size()), in address order.
  std::uintptr_t nth(std::size_t i) const { return std::next(live_.begin(), i)->first; }
  const live_block& at(std::uintptr_t address) const { return live_.at(address); }
  bool contains(const void* p) const { return live_.count(reinterpret_cast<std::uintptr_t>(p)); }

  // Forget every block of `owner` without touching them (their memory is gone).
  void drop_owner(unsigned owner) {
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.owner == owner) {
        live_bytes_ -= it->second.bytes;
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Check and forget every block `dead` says the allocator freed at once
  // (a rewind, a reset, the end of a frame).
  template <class Pred>
  void remove_if(Pred dead) {
    for (auto it = live_.begin(); it != live_.end();) {
      if (dead(it->first, it->second)) {
        verify(reinterpret_cast<void*>(it->first), it->second.bytes, it->second.id);
        live_bytes_ -= it->second.bytes;
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Forget every block (the allocator freed them all at once).
  void clear() {
    live_.clear();
    live_bytes_ = 0;
  }

  std::size_t size() const { return live_.size(); }
  std::uint64_t last_id() const { return last_id_; }
  std::size_t live_bytes() const { return live_bytes_; }

  // The pattern byte at `offset` of block `id`.
  static unsigned char pattern(std::uint64_t id, std::size_t offset) {
    return static_cast<unsigned char>((id * 0x9E3779B1u + offset * 31u) >> 3);
  }

  // Write the pattern over the block, or over its two ends when it is large.
  STRATA_FUZZ_NO_COVERAGE static void fill(void* p, std::size_t bytes, std::uint64_t id) {
    auto* bytes_of = static_cast<unsigned char*>(p);
    for_each_patterned(bytes, [&](std::size_t i) { bytes_of[i] = pattern(id, i); });
  }

  // Check the pattern written by fill().
  static void verify(const void* p, std::size_t bytes, std::uint64_t id) {
    verify_prefix(p, block_of(bytes, id), bytes);
  }

  // Check the first `kept` bytes at `p` hold what `old` held there (a block
  // resized to `p`, in place or moved).
  STRATA_FUZZ_NO_COVERAGE static void verify_prefix(const void* p, const live_block& old,
                                                    std::size_t kept) {
    const auto* bytes_of = static_cast<const unsigned char*>(p);
    for_each_patterned(old.bytes, [&](std::size_t i) {
      if (i < kept)
        check(bytes_of[i] == pattern(old.id, i), "block contents changed while it was live", p, i);
    });
  }

 private:
  static live_block block_of(std::size_t bytes, std::uint64_t id) { return {bytes, id, 0}; }

  template <class F>
  STRATA_FUZZ_NO_COVERAGE static void for_each_patterned(std::size_t bytes, F&& f) {
    if (bytes <= 2 * pattern_span) {
      for (std::size_t i = 0; i < bytes; ++i) f(i);
      return;
    }
    for (std::size_t i = 0; i < pattern_span; ++i) f(i);
    for (std::size_t i = bytes - pattern_span; i < bytes; ++i) f(i);
  }

  std::map<std::uintptr_t, live_block> live_;
  std::uint64_t last_id_ = 0;
  std::size_t live_bytes_ = 0;
};

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_SHADOW_HPP
