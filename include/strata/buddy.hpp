// strata buddy: a power-of-two buddy system over one region taken from any
// upstream at construction.
//
//   strata::buddy<> pool({.total_bytes = 64 << 20, .min_block = 64});
//   void* p = pool.allocate(3000);          // a 4 KiB block, split from a larger one
//   pool.deallocate(p, 3000);               // merged with its buddy while it is free
//
// Blocks are min_block << order, at offsets that are multiples of their size.
// The metadata lives outside the region: per order a bitmap of free blocks
// (with summary levels, so the lowest free block is found in O(log n)) and a
// bitmap of blocks in use, which also says a block's order when it is freed.
// Allocate and free split and merge in O(orders). The region is never read or
// written, so the upstream may hand out memory the CPU cannot touch.
//
// Single-threaded: wrap it in the synchronized adaptor to share it.
#ifndef STRATA_BUDDY_HPP
#define STRATA_BUDDY_HPP

#include <strata/detail/bfc_capacity_error.hpp>
#include <strata/detail/buddy_bitmap.hpp>
#include <strata/ledger.hpp>
#include <strata/resource.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace strata {

// buddy's settings: both sizes powers of two, min_block <= total_bytes.
struct buddy_config {
  std::size_t total_bytes = std::size_t{64} << 20;
  std::size_t min_block = 64;
  // The alignment asked of the upstream (capped at total_bytes); blocks are
  // aligned to their size up to it, and larger alignments are refused.
  std::size_t region_alignment = 4096;
};

// What a buddy holds, in bytes and counts.
struct buddy_statistics {
  std::size_t bytes_in_use = 0;  // blocks handed out, at their power-of-two size
  std::size_t bytes_free = 0;
  std::size_t bytes_reserved = 0;  // the region: in use + free
  std::size_t largest_free = 0;
  std::size_t blocks_in_use = 0;
  std::size_t allocations = 0;  // allocate calls served, ever
  // 1 - largest_free / free: 0 when the free bytes are one block or none.
  double fragmentation() const noexcept {
    return bytes_free == 0
               ? 0.0
               : 1.0 - static_cast<double>(largest_free) / static_cast<double>(bytes_free);
  }
};

template <host_resource Upstream = malloc_resource>
class buddy {
 public:
  explicit buddy(buddy_config config = {}, Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)), config_(validated(config)) {
    min_shift_ = static_cast<unsigned>(__builtin_ctzll(config_.min_block));
    top_order_ = static_cast<unsigned>(__builtin_ctzll(config_.total_bytes)) - min_shift_;
    alignment_ = std::min(config_.region_alignment, config_.total_bytes);
    free_.reserve(top_order_ + 1);
    used_.reserve(top_order_ + 1);
    for (unsigned order = 0; order <= top_order_; ++order) {
      free_.emplace_back(std::size_t{1} << (top_order_ - order));
      used_.emplace_back(std::size_t{1} << (top_order_ - order));
    }
    base_ = reinterpret_cast<std::uintptr_t>(upstream_.allocate(config_.total_bytes, alignment_));
    ledger_.took(config_.total_bytes);
    add_free(top_order_, 0);
  }
  buddy(const buddy&) = delete;
  buddy& operator=(const buddy&) = delete;

  // The region goes back to the upstream; blocks still in use become invalid.
  // A second destructor call aborts.
  ~buddy() {
    life_.end("buddy destroyed twice", "strata::buddy::~buddy", this);
    upstream_.deallocate(reinterpret_cast<void*>(base_), config_.total_bytes, alignment_);
  }

  // The lowest free block of the smallest order that holds `bytes` at
  // `alignment`, split from a larger one when needed. Zero bytes is a block.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    std::size_t need = std::max({bytes, alignment, config_.min_block});
    if (need > config_.total_bytes) [[unlikely]]
      throw capacity_error("buddy", bytes, "above total_bytes");
    if (alignment > alignment_) [[unlikely]]
      throw capacity_error("buddy", bytes, "alignment above the region's");
    unsigned order = order_of(need);
    std::uint64_t candidates = available_ & (~std::uint64_t{0} << order);
    if (candidates == 0) [[unlikely]]
      throw capacity_error("buddy", bytes, "no free block that large");
    unsigned from = static_cast<unsigned>(__builtin_ctzll(candidates));
    std::size_t unit = free_[from].first() << from;  // in min blocks
    remove_free(from, unit);
    while (from > order) {
      --from;
      add_free(from, unit + (std::size_t{1} << from));
    }
    used_[order].set(unit >> order);
    in_use_ += config_.min_block << order;
    ++blocks_in_use_;
    ++allocations_;
    return reinterpret_cast<void*>(base_ + (unit << min_shift_));
  }

  // Free a block and merge it with its buddy while the buddy is free. The
  // size and alignment name the block's order, checked in one bitmap test; a
  // pointer that is no live block's start is reported (one line, abort)
  // before anything changes. Null is ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) return;
    auto address = reinterpret_cast<std::uintptr_t>(p);
    if (address - base_ >= config_.total_bytes) [[unlikely]]
      detail::report_misuse("buddy free of a pointer it did not hand out",
                            "strata::buddy::deallocate", p);
    std::size_t unit = (address - base_) >> min_shift_;
    unsigned order = order_of(std::max({bytes, alignment, config_.min_block}));
    if (order > top_order_ || ((address - base_) & ((config_.min_block << order) - 1)) != 0 ||
        !used_[order].test(unit >> order)) [[unlikely]]
      order = order_in_use(p, unit);
    if (bytes > config_.min_block << order) [[unlikely]]
      detail::report_misuse("buddy block freed with a size larger than it has",
                            "strata::buddy::deallocate", p);
    used_[order].clear(unit >> order);
    in_use_ -= config_.min_block << order;
    --blocks_in_use_;
    while (order < top_order_) {
      std::size_t mate = unit ^ (std::size_t{1} << order);
      if (!free_[order].test(mate >> order)) break;
      remove_free(order, mate);
      unit &= ~(std::size_t{1} << order);
      ++order;
    }
    add_free(order, unit);
  }

  bool is_equal(const buddy& other) const noexcept { return this == &other; }

  buddy_statistics statistics() const noexcept {
    buddy_statistics s;
    s.bytes_in_use = in_use_;
    s.bytes_reserved = config_.total_bytes;
    s.bytes_free = config_.total_bytes - in_use_;
    s.largest_free = available_ == 0
                         ? 0
                         : config_.min_block
                               << (63u - static_cast<unsigned>(__builtin_clzll(available_)));
    s.blocks_in_use = blocks_in_use_;
    s.allocations = allocations_;
    return s;
  }

  // The number of free blocks of min_block << order (for tests and dumps).
  std::size_t free_blocks(unsigned order) const noexcept {
    std::size_t count = 0;
    for (std::size_t block = 0; block < (std::size_t{1} << (top_order_ - order)); ++block)
      count += free_[order].test(block);
    return count;
  }

  const buddy_config& config() const noexcept { return config_; }
  std::uintptr_t base() const noexcept { return base_; }

  // This resource's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }

 private:
  // The configuration, or std::invalid_argument when its sizes do not fit.
  static buddy_config validated(buddy_config config) {
    if (!is_valid_alignment(config.total_bytes) || !is_valid_alignment(config.min_block) ||
        !is_valid_alignment(config.region_alignment) || config.min_block < 16 ||
        config.min_block > config.total_bytes)
      throw std::invalid_argument(
          "strata: buddy sizes must be powers of two with 16 <= min_block <= total_bytes");
    return config;
  }

  // The smallest order whose blocks hold `bytes` (at least min_block, at most total).
  unsigned order_of(std::size_t bytes) const noexcept {
    unsigned log = bytes <= 1 ? 0 : 64u - static_cast<unsigned>(__builtin_clzll(bytes - 1));
    return log <= min_shift_ ? 0 : log - min_shift_;
  }

  // Record a free block of `order` starting at `unit` (in min blocks).
  void add_free(unsigned order, std::size_t unit) noexcept {
    free_[order].set(unit >> order);
    available_ |= std::uint64_t{1} << order;
  }

  void remove_free(unsigned order, std::size_t unit) noexcept {
    free_[order].clear(unit >> order);
    if (free_[order].empty()) available_ &= ~(std::uint64_t{1} << order);
  }

  // The order of the live block starting at `unit`, when the size and
  // alignment given do not name it; reports the pointer when no live block
  // starts there.
  [[gnu::noinline]] unsigned order_in_use(const void* p, std::size_t unit) const noexcept {
    if ((reinterpret_cast<std::uintptr_t>(p) - base_) & (config_.min_block - 1)) [[unlikely]]
      report_interior(p);
    for (unsigned order = 0; order <= top_order_; ++order) {
      if (used_[order].test(unit >> order)) return order;
      if (unit & (std::size_t{1} << order)) break;
    }
    report_unknown(p, unit);
  }

  // A pointer inside the region that starts no live block: inside a free
  // block it is a double free, else an interior pointer.
  [[noreturn, gnu::cold, gnu::noinline]] void report_unknown(const void* p,
                                                             std::size_t unit) const noexcept {
    for (unsigned order = 0; order <= top_order_; ++order)
      if (free_[order].test(unit >> order))
        detail::report_misuse("double free of a buddy block", "strata::buddy::deallocate", p);
    report_interior(p);
  }

  // A pointer inside a live block, or inside the region but nowhere a block starts.
  [[noreturn, gnu::cold, gnu::noinline]] static void report_interior(const void* p) noexcept {
    detail::report_misuse("buddy free of a pointer that is not a live block (interior)",
                          "strata::buddy::deallocate", p);
  }

  Upstream upstream_;
  buddy_config config_;
  unsigned min_shift_ = 0;
  unsigned top_order_ = 0;
  std::size_t alignment_ = 0;
  std::uintptr_t base_ = 0;
  std::vector<detail::buddy_bitmap> free_;  // per order, by block number
  std::vector<detail::buddy_bitmap> used_;
  std::uint64_t available_ = 0;  // bit k: some block of order k is free
  std::size_t in_use_ = 0;
  std::size_t blocks_in_use_ = 0;
  std::size_t allocations_ = 0;
  detail::lifetime_word life_;
  ledger_entry ledger_{"buddy", upstream_};
};

}  // namespace strata

#endif  // STRATA_BUDDY_HPP
