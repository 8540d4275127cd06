// strata bfc: best-fit with coalescing over regions taken from any upstream.
//
//   strata::bfc<> pool;                     // regions from malloc, grown on demand
//   void* p = pool.allocate(1000);          // the smallest free chunk that fits
//   pool.deallocate(p, 1000);               // merged at once with free neighbours
//
// No metadata lives in the managed memory: chunk records sit in the allocator's
// own node storage (a vector from the C++ heap), the blocks in use found by
// address through a hash table, every chunk's neighbours through links in
// address order, and free chunks by size through bins of ordered trees. So bfc runs unchanged over
// memory the CPU cannot touch (device memory, PROT_NONE mappings).
//
// Single-threaded: wrap it in the synchronized adaptor to share it.
#ifndef STRATA_BFC_HPP
#define STRATA_BFC_HPP

#include <strata/detail/bfc_address_table.hpp>
#include <strata/detail/bfc_capacity_error.hpp>
#include <strata/detail/bfc_size_bins.hpp>
#include <strata/ledger.hpp>
#include <strata/resource.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace strata {

// How the regions bfc takes from its upstream grow.
enum class bfc_growth {
  fixed,     // every region is initial_region_bytes (or the request, if larger)
  doubling,  // each region twice the last, up to max_region_bytes
};

// bfc's settings; the defaults suit host memory and mixed sizes up to megabytes.
struct bfc_config {
  // Every chunk is a multiple of this power of two, and aligned to it.
  std::size_t granule = 64;
  std::size_t initial_region_bytes = std::size_t{2} << 20;
  bfc_growth growth = bfc_growth::doubling;
  // The cap on one region: a larger request throws capacity_error.
  std::size_t max_region_bytes = std::size_t{1} << 30;
  // The cap on all regions together.
  std::size_t max_reserved_bytes = SIZE_MAX;
  // The split rule: a chunk larger than a request is split only when the rest
  // is at least min_split_bytes and at least request >> split_waste_shift, so a
  // large chunk is not cut into slivers; the rest stays in the block otherwise.
  std::size_t min_split_bytes = 128;
  unsigned split_waste_shift = 3;
};

// What a bfc holds, in bytes and counts.
struct bfc_statistics {
  std::size_t bytes_in_use = 0;    // chunks handed out (request rounded up, rest kept)
  std::size_t bytes_free = 0;      // free chunks
  std::size_t bytes_reserved = 0;  // regions taken from the upstream: in use + free
  std::size_t largest_free = 0;    // the largest free chunk
  std::size_t chunks_in_use = 0;
  std::size_t free_chunks = 0;
  std::size_t regions = 0;
  std::size_t allocations = 0;           // allocate calls served, ever
  std::size_t upstream_allocations = 0;  // regions taken, ever
  // 1 - largest_free / free: 0 when the free bytes are one chunk or none.
  double fragmentation() const noexcept {
    return bytes_free == 0
               ? 0.0
               : 1.0 - static_cast<double>(largest_free) / static_cast<double>(bytes_free);
  }
};

template <host_resource Upstream = malloc_resource>
class bfc {
 public:
  explicit bfc(bfc_config config = {}, Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)),
        config_(config),
        bins_(config.granule == 0 ? 0 : static_cast<unsigned>(__builtin_ctzll(config.granule))),
        next_region_bytes_(config.initial_region_bytes) {
    if (!is_valid_alignment(config_.granule) || config_.granule < 16)
      throw std::invalid_argument("strata: bfc granule must be a power of two >= 16");
    if (config_.initial_region_bytes == 0 || config_.max_region_bytes < config_.granule)
      throw std::invalid_argument("strata: bfc region sizes must hold a granule");
    next_region_bytes_ = round_up(std::min(config_.initial_region_bytes, config_.max_region_bytes));
  }
  bfc(const bfc&) = delete;
  bfc& operator=(const bfc&) = delete;

  // Every region goes back to the upstream; blocks still in use become invalid.
  // A second destructor call aborts.
  ~bfc() {
    life_.end("bfc destroyed twice", "strata::bfc::~bfc", this);
    for (const region& r : regions_)
      upstream_.deallocate(reinterpret_cast<void*>(r.base), r.size, config_.granule);
  }

  // The smallest free chunk that holds `bytes` at `alignment`, split when the
  // rest is worth keeping; a new region when none fits. Zero bytes is a block.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    std::size_t need = fitted_size(bytes, alignment);
    std::uint32_t i = bins_.best_fit(chunks_, need);
    if (i == detail::no_chunk) [[unlikely]]
      i = grow(bytes, need);
    make_room();
    bins_.erase(chunks_, i);
    chunks_[i].free = false;
    --free_chunks_;
    if (alignment > config_.granule) [[unlikely]]
      i = split_front(i, alignment);
    std::size_t size = std::max(round_up(bytes), config_.granule);
    split_back(i, size);
    table_.insert(chunks_[i].base, i);
    in_use_ += chunks_[i].size;
    ++chunks_in_use_;
    ++allocations_;
    return reinterpret_cast<void*>(chunks_[i].base);
  }

  // Free a block, merging it with a free neighbour on either side. A pointer
  // that is no block's start, or a block already free, is reported (one line,
  // abort) before anything changes. Null is ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t = default_alignment) noexcept {
    if (p == nullptr) return;
    std::size_t slot = table_.find(reinterpret_cast<std::uintptr_t>(p));
    if (slot == detail::bfc_address_table::npos) [[unlikely]]
      report_unknown(p);
    std::uint32_t i = table_.value(slot);
    if (bytes > chunks_[i].size) [[unlikely]]
      detail::report_misuse("bfc block freed with a size larger than it has",
                            "strata::bfc::deallocate", p);
    table_.erase(slot);
    in_use_ -= chunks_[i].size;
    --chunks_in_use_;
    std::uint32_t prev = chunks_[i].prev;
    if (prev != detail::no_chunk && chunks_[prev].free) {
      bins_.erase(chunks_, prev);
      --free_chunks_;
      absorb_next(prev);
      i = prev;
    }
    std::uint32_t next = chunks_[i].next;
    if (next != detail::no_chunk && chunks_[next].free) {
      bins_.erase(chunks_, next);
      --free_chunks_;
      absorb_next(i);
    }
    make_free(i);
  }

  bool is_equal(const bfc& other) const noexcept { return this == &other; }

  // Return every region with nothing in use to the upstream; the bytes returned.
  std::size_t garbage_collect() noexcept { return release_free_regions(0, true); }

  // Return free regions, largest first, until at most keep_bytes are free (or
  // no region is wholly free); the bytes returned.
  std::size_t trim(std::size_t keep_bytes) noexcept {
    return release_free_regions(keep_bytes, false);
  }

  bfc_statistics statistics() const noexcept {
    bfc_statistics s;
    s.bytes_in_use = in_use_;
    s.bytes_reserved = reserved_;
    s.bytes_free = reserved_ - in_use_;
    std::uint32_t largest = bins_.largest(chunks_);
    s.largest_free = largest == detail::no_chunk ? 0 : chunks_[largest].size;
    s.chunks_in_use = chunks_in_use_;
    s.free_chunks = free_chunks_;
    s.regions = regions_.size();
    s.allocations = allocations_;
    s.upstream_allocations = upstream_allocations_;
    return s;
  }

  // Call f(region_base, region_bytes, chunk_address, chunk_bytes, free) for
  // every chunk, regions and chunks in address order: the occupancy map.
  template <class F>
  void visit(F&& f) const {
    for (const region& r : regions_)
      for (std::uint32_t i = r.first; i != detail::no_chunk; i = chunks_[i].next)
        f(r.base, r.size, chunks_[i].base, chunks_[i].size, chunks_[i].free);
  }

  // Every region and its chunks in address order, one line each: where the
  // holes are.
  std::string dump_text() const {
    bfc_statistics s = statistics();
    std::string out = "bfc: " + std::to_string(s.regions) + " regions, reserved " +
                      std::to_string(s.bytes_reserved) + ", in use " +
                      std::to_string(s.bytes_in_use) + ", free " + std::to_string(s.bytes_free) +
                      ", largest free " + std::to_string(s.largest_free) + ", fragmentation " +
                      format_ratio(s.fragmentation()) + "\n";
    for (const region& r : regions_) {
      out += "region " + format_address(r.base) + " " + std::to_string(r.size) + " bytes\n";
      for (std::uint32_t i = r.first; i != detail::no_chunk; i = chunks_[i].next)
        out += "  +" + std::to_string(chunks_[i].base - r.base) + " " +
               std::to_string(chunks_[i].size) + (chunks_[i].free ? " free\n" : " used\n");
    }
    return out;
  }

  // The same as dump_text, as one JSON object.
  std::string dump_json() const {
    bfc_statistics s = statistics();
    std::string out = "{\"reserved\":" + std::to_string(s.bytes_reserved) +
                      ",\"in_use\":" + std::to_string(s.bytes_in_use) +
                      ",\"free\":" + std::to_string(s.bytes_free) +
                      ",\"largest_free\":" + std::to_string(s.largest_free) +
                      ",\"fragmentation\":" + format_ratio(s.fragmentation()) + ",\"regions\":[";
    for (std::size_t n = 0; n < regions_.size(); ++n) {
      const region& r = regions_[n];
      out += std::string(n == 0 ? "" : ",") + "{\"base\":\"" + format_address(r.base) +
             "\",\"bytes\":" + std::to_string(r.size) + ",\"chunks\":[";
      for (std::uint32_t i = r.first; i != detail::no_chunk; i = chunks_[i].next)
        out += std::string(chunks_[i].base == r.base ? "" : ",") +
               "{\"offset\":" + std::to_string(chunks_[i].base - r.base) +
               ",\"bytes\":" + std::to_string(chunks_[i].size) +
               ",\"free\":" + (chunks_[i].free ? "true" : "false") + "}";
      out += "]}";
    }
    return out + "]}";
  }

  const bfc_config& config() const noexcept { return config_; }
  Upstream& upstream() noexcept { return upstream_; }
  // This resource's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept { return ledger_; }
  const ledger_entry& ledger() const noexcept { return ledger_; }

 private:
  struct region {
    std::uintptr_t base;
    std::size_t size;
    std::uint32_t first;  // its first chunk, which keeps its record for good
  };

  // `bytes` rounded up to the granule, saturating instead of wrapping.
  std::size_t round_up(std::size_t bytes) const noexcept {
    return bytes > SIZE_MAX - config_.granule ? SIZE_MAX & ~(config_.granule - 1)
                                              : align_up(bytes, config_.granule);
  }

  // The chunk size that holds `bytes` at `alignment` wherever the chunk starts.
  std::size_t fitted_size(std::size_t bytes, std::size_t alignment) const noexcept {
    std::size_t size = std::max(round_up(bytes), config_.granule);
    if (alignment <= config_.granule) return size;
    return size > SIZE_MAX - alignment ? SIZE_MAX : size + alignment - config_.granule;
  }

  // Spare records for the two cuts an allocation may make and a table slot
  // for its block, taken before anything changes so a failure leaves the
  // allocator as it was.
  void make_room() {
    if (spare_count_ < 2) [[unlikely]]
      add_spares();
    table_.make_room(1);
  }

  // Two more records on the spare list.
  [[gnu::cold, gnu::noinline]] void add_spares() {
    if (chunks_.size() + 2 >= detail::no_chunk) throw capacity_error("bfc", 0, "too many chunks");
    for (int n = 0; n < 2; ++n) {
      chunks_.push_back({});
      chunks_.back().priority = next_priority();
      drop_chunk(static_cast<std::uint32_t>(chunks_.size() - 1));
    }
  }

  // A record from the spare list (make_room put one there).
  std::uint32_t new_chunk() noexcept {
    std::uint32_t i = spare_;
    spare_ = chunks_[i].next;
    --spare_count_;
    return i;
  }

  // Put a record on the spare list.
  void drop_chunk(std::uint32_t i) noexcept {
    chunks_[i].next = spare_;
    spare_ = i;
    ++spare_count_;
  }

  // A pseudo-random tree priority (xorshift), fixed per record.
  std::uint32_t next_priority() noexcept {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return static_cast<std::uint32_t>(rng_ >> 32);
  }

  // Mark chunk `i` free and put it in its bin.
  void make_free(std::uint32_t i) noexcept {
    chunks_[i].free = true;
    ++free_chunks_;
    bins_.insert(chunks_, i);
  }

  // Merge the chunk after `i` into `i` (both out of the bins).
  void absorb_next(std::uint32_t i) noexcept {
    std::uint32_t gone = chunks_[i].next;
    chunks_[i].size += chunks_[gone].size;
    chunks_[i].next = chunks_[gone].next;
    if (chunks_[i].next != detail::no_chunk) chunks_[chunks_[i].next].prev = i;
    drop_chunk(gone);
  }

  // Cut the used chunk `i` at `offset`; the new chunk after the cut, which
  // takes `i`'s place in use when `i` becomes the free front.
  std::uint32_t cut(std::uint32_t i, std::size_t offset) noexcept {
    std::uint32_t back = new_chunk();
    detail::bfc_chunk c = chunks_[i];
    chunks_[back] = {
        c.base + offset,  c.size - offset,        i, c.next, detail::no_chunk, detail::no_chunk,
        detail::no_chunk, chunks_[back].priority, 0, false};
    if (c.next != detail::no_chunk) chunks_[c.next].prev = back;
    chunks_[i].next = back;
    chunks_[i].size = offset;
    return back;
  }

  // Free the front of chunk `i` up to its first address aligned to `alignment`;
  // the chunk that starts there.
  std::uint32_t split_front(std::uint32_t i, std::size_t alignment) noexcept {
    std::uintptr_t base = chunks_[i].base;
    std::size_t pad = align_up(base, alignment) - base;
    if (pad == 0) return i;
    std::uint32_t back = cut(i, pad);
    make_free(i);
    return back;
  }

  // Keep `size` bytes of chunk `i` and free the rest, if the split rule allows.
  // The chunk after it is in use (no two free chunks touch), so the rest
  // needs no merge.
  void split_back(std::uint32_t i, std::size_t size) noexcept {
    std::size_t rest = chunks_[i].size - size;
    if (rest < config_.min_split_bytes || rest < (size >> config_.split_waste_shift) ||
        rest < config_.granule)
      return;
    make_free(cut(i, size));
  }

  // Take a region from the upstream for a request of `bytes` needing a chunk of
  // `need`, backing off to smaller regions when the upstream refuses; the
  // region's one free chunk. Throws capacity_error when nothing can hold it.
  [[gnu::cold, gnu::noinline]] std::uint32_t grow(std::size_t bytes, std::size_t need) {
    if (need > config_.max_region_bytes)
      throw capacity_error("bfc", bytes, "above max_region_bytes");
    if (need > config_.max_reserved_bytes)
      throw capacity_error("bfc", bytes, "above max_reserved_bytes");
    if (reserved_ + need > config_.max_reserved_bytes) {
      garbage_collect();
      if (reserved_ + need > config_.max_reserved_bytes)
        throw capacity_error("bfc", bytes, "max_reserved_bytes in use");
    }
    std::size_t size = std::max(need, next_region_bytes_);
    size = std::min(size, config_.max_reserved_bytes - reserved_) & ~(config_.granule - 1);
    size = std::max(size, need);
    void* base = nullptr;
    for (;;) {
      try {
        base = upstream_.allocate(size, config_.granule);
        break;
      } catch (const std::bad_alloc&) {
        if (size == need) throw capacity_error("bfc", bytes, "the upstream refused it");
        size = std::max(need, round_up(size / 2));
      }
    }
    if (config_.growth == bfc_growth::doubling && size >= next_region_bytes_)
      next_region_bytes_ = std::min(config_.max_region_bytes, round_up(size) * 2);
    return add_region(reinterpret_cast<std::uintptr_t>(base), size);
  }

  // Record a region of `size` bytes at `base` as one free chunk; that chunk.
  std::uint32_t add_region(std::uintptr_t base, std::size_t size) {
    std::uint32_t i;
    try {
      regions_.reserve(regions_.size() + 1);
      if (spare_count_ == 0) add_spares();
      i = new_chunk();
    } catch (...) {
      upstream_.deallocate(reinterpret_cast<void*>(base), size, config_.granule);
      throw;
    }
    chunks_[i] = {base,
                  size,
                  detail::no_chunk,
                  detail::no_chunk,
                  detail::no_chunk,
                  detail::no_chunk,
                  detail::no_chunk,
                  chunks_[i].priority,
                  0,
                  false};
    auto at = std::lower_bound(regions_.begin(), regions_.end(), base,
                               [](const region& r, std::uintptr_t b) { return r.base < b; });
    regions_.insert(at, region{base, size, i});
    reserved_ += size;
    ledger_.took(size);
    ++upstream_allocations_;
    make_free(i);
    return i;
  }

  // Return wholly free regions (largest first) while more than keep_bytes are
  // free, or every one when `all`; the bytes returned.
  std::size_t release_free_regions(std::size_t keep_bytes, bool all) noexcept {
    std::size_t returned = 0;
    for (;;) {
      std::size_t pick = regions_.size();
      for (std::size_t n = 0; n < regions_.size(); ++n) {
        std::uint32_t i = regions_[n].first;
        if (chunks_[i].free && chunks_[i].size == regions_[n].size &&
            (pick == regions_.size() || regions_[n].size > regions_[pick].size))
          pick = n;
      }
      if (pick == regions_.size() || (!all && reserved_ - in_use_ <= keep_bytes)) return returned;
      region r = regions_[pick];
      bins_.erase(chunks_, r.first);
      --free_chunks_;
      drop_chunk(r.first);
      regions_.erase(regions_.begin() + static_cast<std::ptrdiff_t>(pick));
      reserved_ -= r.size;
      ledger_.gave(r.size);
      returned += r.size;
      upstream_.deallocate(reinterpret_cast<void*>(r.base), r.size, config_.granule);
    }
  }

  // Report a pointer that starts no block in use: inside a free chunk it was
  // freed already (perhaps merged since), inside a used one it is interior;
  // outside every region, foreign. A walk of the region: this path is cold.
  [[noreturn, gnu::cold, gnu::noinline]] void report_unknown(const void* p) const noexcept {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    for (const region& r : regions_) {
      if (address < r.base || address - r.base >= r.size) continue;
      std::uint32_t i = r.first;
      while (address - chunks_[i].base >= chunks_[i].size) i = chunks_[i].next;
      if (chunks_[i].free)
        detail::report_misuse("double free of a bfc block", "strata::bfc::deallocate", p);
      detail::report_misuse("bfc free of a pointer that is not a live block (interior)",
                            "strata::bfc::deallocate", p);
    }
    detail::report_misuse("bfc free of a pointer it did not hand out", "strata::bfc::deallocate",
                          p);
  }

  static std::string format_address(std::uintptr_t address) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    return text;
  }

  static std::string format_ratio(double value) {
    char text[24];
    std::snprintf(text, sizeof text, "%.4f", value);
    return text;
  }

  Upstream upstream_;
  bfc_config config_;
  std::vector<detail::bfc_chunk> chunks_;
  detail::bfc_address_table table_;
  detail::bfc_size_bins bins_;
  std::vector<region> regions_;
  std::uint32_t spare_ = detail::no_chunk;
  std::size_t spare_count_ = 0;
  std::uint64_t rng_ = 0x2545F4914F6CDD1Dull;
  std::size_t next_region_bytes_;
  detail::lifetime_word life_;
  std::size_t reserved_ = 0;
  std::size_t in_use_ = 0;
  std::size_t chunks_in_use_ = 0;
  std::size_t free_chunks_ = 0;
  std::size_t allocations_ = 0;
  std::size_t upstream_allocations_ = 0;
  ledger_entry ledger_{"bfc", upstream_};
};

}  // namespace strata

#endif  // STRATA_BFC_HPP
