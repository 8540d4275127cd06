// A shadow model of the blocks a test holds: where each lives, how large it is,
// and the pattern written into it, so a test can tell a block handed out twice
// (it overlaps a live one) and a block whose contents changed behind its back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace strata_limits {

class shadow_heap {
 public:
  struct entry {
    std::size_t size;
    std::uint64_t seed;
  };

  // Record a block just handed out and write its pattern; false when it
  // overlaps a block still live.
  bool add(void* p, std::size_t size, std::uint64_t seed) {
    auto start = reinterpret_cast<std::uintptr_t>(p);
    auto next = blocks_.lower_bound(start);
    if (next != blocks_.end() && next->first < start + (size == 0 ? 1 : size)) return false;
    if (next != blocks_.begin()) {
      auto before = std::prev(next);
      if (before->first + (before->second.size == 0 ? 1 : before->second.size) > start)
        return false;
    }
    blocks_[start] = {size, seed};
    write(p, size, seed);
    return true;
  }

  // Whether a live block still holds its pattern.
  bool intact(const void* p) const {
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    return it != blocks_.end() && holds(p, it->second.size, it->second.seed, true);
  }

  // Whether `moved` holds the pattern of live block `p` up to `limit` bytes
  // (what a realloc that moved or shrank it must have kept).
  bool carried(const void* p, const void* moved, std::size_t limit) const {
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == blocks_.end()) return false;
    std::size_t size = it->second.size < limit ? it->second.size : limit;
    return holds(moved, size, it->second.seed, size == it->second.size);
  }

  void remove(const void* p) { blocks_.erase(reinterpret_cast<std::uintptr_t>(p)); }
  std::size_t size_of(const void* p) const {
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    return it == blocks_.end() ? 0 : it->second.size;
  }
  std::size_t count() const { return blocks_.size(); }
  std::size_t bytes() const {
    std::size_t total = 0;
    for (const auto& [start, e] : blocks_) total += e.size;
    return total;
  }
  // The live block at `index` in address order.
  void* at(std::size_t index) const {
    auto it = blocks_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(index));
    return reinterpret_cast<void*>(it->first);
  }

 private:
  // Offsets below `size` that carry the pattern, the same for every block:
  // the first 4 KiB, then one byte per 64 KiB (the heap's slice); with `tail`
  // also the last 64 bytes. A 40 MiB block is checked without faulting in all
  // of it, yet a slice lost, shared or handed out twice still shows.
  template <class Visit>
  static void for_each_offset(std::size_t size, bool tail, Visit visit) {
    constexpr std::size_t head = 4096;
    constexpr std::size_t stride = 65536;
    for (std::size_t i = 0; i < size && i < head; ++i) visit(i);
    for (std::size_t k = 1; k * stride < size; ++k) {
      std::size_t i = k * stride + k % 61 * 64;
      if (i < size) visit(i);
    }
    if (tail && size > head)
      for (std::size_t i = size - 64; i < size; ++i) visit(i);
  }
  static std::uint8_t pattern(std::uint64_t seed, std::size_t offset) {
    return static_cast<std::uint8_t>((seed * 0x9E3779B97F4A7C15u + offset * 0x2545F491u) >> 29);
  }
  static void write(void* p, std::size_t size, std::uint64_t seed) {
    auto* bytes = static_cast<std::uint8_t*>(p);
    for_each_offset(size, true, [&](std::size_t i) { bytes[i] = pattern(seed, i); });
  }
  static bool holds(const void* p, std::size_t size, std::uint64_t seed, bool tail) {
    const auto* bytes = static_cast<const std::uint8_t*>(p);
    bool same = true;
    for_each_offset(size, tail, [&](std::size_t i) { same &= bytes[i] == pattern(seed, i); });
    return same;
  }

  std::map<std::uintptr_t, entry> blocks_;
};

}  // namespace strata_limits
