// strata monotonic arena: bump allocation over chunks taken from an upstream
// resource, freed all at once by reset() or back to a mark by rewind().
//
//   strata::monotonic_arena<> arena;                 // over malloc
//   void* p = arena.allocate(256, 16);               // inline bump, no virtual call
//   { auto scope = arena.scope(); ... }              // everything since is freed here
//   arena.reset(strata::retention::keep_largest);    // keep one chunk for next time
//
// deallocate() is a no-op; the arena is a host_resource, so resource_ref(arena)
// gives it a std::pmr face. Not thread-safe: one arena belongs to one thread.
#ifndef STRATA_ARENA_HPP
#define STRATA_ARENA_HPP

#include <strata/detail/arena_signature.hpp>
#include <strata/ledger.hpp>
#include <strata/resource.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

// What reset() keeps of the chunks the arena holds, for the next cycle.
enum class retention {
  keep_nothing,         // every chunk back to the upstream
  keep_largest,         // the largest chunk stays, the rest go back
  keep_everything,      // all chunks stay
  decaying_high_water,  // keep up to a high-water mark that decays each reset
  release_to_os,        // keep nothing, and ask the upstream to release memory now
};

// How chunk sizes grow: initial, multiplied by factor per new chunk, up to max.
struct arena_growth {
  std::size_t initial_chunk_bytes = 64 * 1024;
  std::size_t factor = 2;
  std::size_t max_chunk_bytes = 64 * 1024 * 1024;
};

// Run-time choices of an arena.
struct arena_options {
  arena_growth growth{};
  retention default_retention = retention::keep_largest;
  unsigned decay_percent = 25;  // share of the high-water mark forgotten per reset
};

// Compile-time choices of an arena: what the fast path carries.
struct arena_config {
  bool statistics = true;      // false is minimal mode: no counters compiled in
  bool checked = debug_build;  // detect stale marks (foreign marks are always caught)
  bool prefetch = false;       // prefetch each new block for writing
};
inline constexpr arena_config minimal_arena_config{.statistics = false, .checked = false};

// Statistics of an arena since its last reset (reserved: now).
struct arena_stats {
  std::size_t bytes_used = 0;       // bytes asked for, live
  std::size_t bytes_reserved = 0;   // bytes of chunks held, in use or spare
  std::size_t alignment_waste = 0;  // padding inserted to align blocks
  std::size_t peak_bytes_used = 0;  // since reset() or reset_peak()
  std::size_t allocations = 0;
  std::size_t chunks = 0;
};

namespace detail {

// The header at the start of every chunk an arena holds.
struct arena_chunk {
  enum class origin : unsigned char { normal, oversize, borrowed };
  static constexpr std::size_t header_bytes = 64;  // keeps chunk data cache-line aligned

  std::uint64_t signature;  // arena_chunk_signature: names the chunk in a heap report
  arena_chunk* next;
  std::size_t bytes;  // the whole chunk, header included
  origin kind;

  char* begin() noexcept { return reinterpret_cast<char*>(this) + header_bytes; }
  char* end() noexcept { return reinterpret_cast<char*>(this) + bytes; }
};

// A registered destructor, run when the arena rewinds past its object.
struct destructor_node {
  void (*destroy)(void* object, std::size_t count);
  void* object;
  std::size_t count;
  destructor_node* next;
};

// The live counters of an arena with statistics.
struct arena_counters {
  std::size_t used = 0;
  std::size_t waste = 0;
  std::size_t allocations = 0;
  std::size_t peak = 0;
};
struct no_counters {};

// The marks still valid in a checked arena: a stack, since marks nest.
class open_marks {
 public:
  std::uint64_t open() {
    serials_.push_back(++last_serial_);
    return last_serial_;
  }
  // Whether the mark with this serial is open; closes every mark opened after it.
  bool rewind_to(std::uint64_t serial) {
    while (!serials_.empty() && serials_.back() > serial) serials_.pop_back();
    return !serials_.empty() && serials_.back() == serial;
  }
  void close_top() { serials_.pop_back(); }
  void clear() noexcept { serials_.clear(); }

 private:
  std::vector<std::uint64_t> serials_;
  std::uint64_t last_serial_ = 0;
};
struct no_marks {};

// The births of arenas, one count for the process: an arena made where another
// was destroyed has a birth no mark of the old one carries.
inline std::atomic<std::uint64_t> next_arena_birth{1};

}  // namespace detail

// A position in an arena to rewind to. Opaque: take one with mark().
struct arena_mark {
  const void* owner;
  detail::arena_chunk* chunks;
  detail::arena_chunk* current;
  char* cursor;
  detail::destructor_node* destructors;
  std::size_t used, waste, allocations;
  std::uint64_t serial;
  std::uint64_t birth;  // the arena's: tells an arena from one made at its address since
  std::uint64_t cycle;  // the arena's resets and releases before the mark was taken
};

template <class Arena>
class scoped_mark;

template <host_resource Upstream = malloc_resource, arena_config Config = arena_config{}>
class monotonic_arena {
 public:
  using upstream_type = Upstream;
  static constexpr arena_config config = Config;

  // An empty arena; the first allocation takes the first chunk.
  explicit monotonic_arena(arena_options options = {}, Upstream upstream = Upstream{})
      : upstream_(std::move(upstream)), options_(options) {
    if (options_.growth.factor == 0 || options_.growth.initial_chunk_bytes == 0)
      throw std::invalid_argument("strata: arena growth needs a factor and an initial size");
    next_chunk_bytes_ = std::max(options_.growth.initial_chunk_bytes, min_chunk_bytes);
  }

  // An arena whose first chunk is `buffer`, which it never frees; it must hold
  // at least 128 bytes and outlive the arena.
  monotonic_arena(void* buffer, std::size_t bytes, arena_options options = {},
                  Upstream upstream = Upstream{})
      : monotonic_arena(options, std::move(upstream)) {
    auto start = align_up(reinterpret_cast<std::uintptr_t>(buffer), alignof(detail::arena_chunk));
    std::size_t lost = start - reinterpret_cast<std::uintptr_t>(buffer);
    if (bytes < lost + detail::arena_chunk::header_bytes + 64)
      throw std::invalid_argument("strata: arena buffer too small");
    auto* chunk = reinterpret_cast<detail::arena_chunk*>(start);
    *chunk = {detail::arena_chunk_signature, nullptr, bytes - lost,
              detail::arena_chunk::origin::borrowed};
    reserved_bytes_ += chunk->bytes;
    link_in_use(chunk);
    make_current(chunk);
  }

  monotonic_arena(const monotonic_arena&) = delete;
  monotonic_arena& operator=(const monotonic_arena&) = delete;

  // Run registered destructors and give every chunk back.
  // A second destructor call aborts; so does any later use (birth_ 0 says so).
  ~monotonic_arena() {
    if (*static_cast<volatile std::uint64_t*>(&birth_) == 0) [[unlikely]]
      detail::report_misuse("monotonic_arena destroyed twice", "monotonic_arena::~monotonic_arena",
                            this);
    run_destructors(nullptr);
    release_list(chunks_);
    release_list(spare_);
    // Volatile: stores into an object that is ending are otherwise dropped.
    *static_cast<char* volatile*>(&cursor_) = nullptr;
    *static_cast<char* volatile*>(&limit_) = nullptr;
    *static_cast<volatile std::uint64_t*>(&birth_) = 0;
  }

  // ---- allocation ----------------------------------------------------------

  // Allocate `bytes` aligned to `alignment` (a power of two, else
  // std::invalid_argument); grows by a chunk when full, std::bad_alloc if the
  // upstream cannot give one. Never null; zero bytes gives a distinct block.
  // Always inlined, with bump_or(): in a large caller GCC otherwise left a call
  // per allocation (1.2 ns against 0.8 inlined, strata-bench frame/frame-arena).
  [[nodiscard, gnu::always_inline]] void* allocate(std::size_t bytes,
                                                   std::size_t alignment = default_alignment) {
    if (!is_valid_alignment(alignment)) [[unlikely]]
      detail::throw_bad_alignment(alignment);
    return bump_or(bytes, alignment,
                   [this, bytes, alignment] { return allocate_slow(bytes, alignment); });
  }

  // Allocate from the current chunk only: null, rather than growth, when full,
  // and null for an alignment that is not a power of two. A null answer leaves
  // the arena as it was (noexcept: the bad alignment cannot throw here).
  [[nodiscard, gnu::always_inline]] void* try_allocate(
      std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!is_valid_alignment(alignment)) [[unlikely]]
      return nullptr;
    return bump_or(bytes, alignment,
                   [this, bytes, alignment] { return bump_exact(bytes, alignment); });
  }

  // A no-op: arena memory is freed by reset(), rewind() or the destructor.
  void deallocate(void*, std::size_t, std::size_t = default_alignment) noexcept {}

  // Fill out[0..count) with `count` separate blocks of `size` bytes, each
  // aligned to `alignment`, in one call. std::bad_array_new_length on overflow.
  void allocate_batch(std::size_t size, std::size_t count, void** out,
                      std::size_t alignment = default_alignment) {
    check_alignment(alignment);
    if (count == 0) return;
    if (size > SIZE_MAX - alignment) [[unlikely]]  // the stride would wrap around
      detail::throw_bad_array_length();
    std::size_t stride = align_up(size + (size == 0), alignment);
    std::size_t total = checked_multiply(stride, count);
    auto* base = static_cast<char*>(allocate(total, alignment));
    carve(base, stride, count, out);
    if constexpr (Config.statistics) {
      counters_.used -= total - size * count;
      counters_.waste += total - size * count;
      counters_.allocations += count - 1;
    }
#ifdef STRATA_HAS_ASAN
    for (std::size_t i = 0; i < count && stride > size; ++i)
      annotate_released(base + i * stride + size, stride - size);
#endif
  }

  // Uninitialised storage for `count` objects of T.
  template <class T>
  [[nodiscard]] std::span<T> allocate_array(std::size_t count) {
    return {static_cast<T*>(allocate(checked_multiply(count, sizeof(T)), alignof(T))), count};
  }

  // Construct a T; if T has a destructor that does something, it runs when the
  // arena rewinds past the object or resets.
  template <class T, class... Args>
  T* make(Args&&... args) {
    void* storage = allocate(sizeof(T), alignof(T));
    if constexpr (std::is_trivially_destructible_v<T>) {
      return detail::construct_in<T>(storage, std::forward<Args>(args)...);
    } else {
      auto* node = static_cast<detail::destructor_node*>(
          allocate(sizeof(detail::destructor_node), alignof(detail::destructor_node)));
      T* object = detail::construct_in<T>(storage, std::forward<Args>(args)...);
      *node = {&destroy_objects<T>, object, 1, destructors_};
      destructors_ = node;
      return object;
    }
  }

  // Value-initialise `count` objects of T, destroyed as make() objects are.
  template <class T>
  std::span<T> make_array(std::size_t count) {
    std::span<T> objects = allocate_array<T>(count);
    if constexpr (std::is_trivially_destructible_v<T>) {
      std::uninitialized_value_construct(objects.begin(), objects.end());
    } else {
      auto* node = static_cast<detail::destructor_node*>(
          allocate(sizeof(detail::destructor_node), alignof(detail::destructor_node)));
      std::uninitialized_value_construct(objects.begin(), objects.end());
      *node = {&destroy_objects<T>, objects.data(), count, destructors_};
      destructors_ = node;
    }
    return objects;
  }

  // ---- marks, reset --------------------------------------------------------

  // The current position, to rewind to later.
  [[nodiscard]] arena_mark mark() {
    arena_mark m{this, chunks_, current_, cursor_, destructors_, 0, 0, 0, 0, birth_, cycle_};
    if constexpr (Config.statistics) {
      m.used = counters_.used;
      m.waste = counters_.waste;
      m.allocations = counters_.allocations;
    }
    if constexpr (Config.checked) m.serial = marks_.open();
    return m;
  }

  // A mark that rewinds the arena when it goes out of scope.
  [[nodiscard]] scoped_mark<monotonic_arena> scope() {
    return scoped_mark<monotonic_arena>(*this);
  }

  // Free everything allocated since `m`, which stays valid; marks taken after
  // it become stale. A foreign mark, or a stale one in a checked arena, aborts.
  void rewind(const arena_mark& m) {
    check_mark(m, "monotonic_arena::rewind");
    rewind_unchecked(m);
  }

  // Rewind to `m` and close it (what a scoped_mark does).
  void rewind_and_close(const arena_mark& m) {
    check_mark(m, "monotonic_arena::rewind");
    if constexpr (Config.checked) marks_.close_top();
    rewind_unchecked(m);
  }

  // Run destructors and give every chunk back, the initial buffer included: the
  // arena is empty and no longer touches that buffer.
  void release() {
    run_destructors(nullptr);
    release_list(chunks_);
    release_list(spare_);
    chunks_ = spare_ = current_ = nullptr;
    cursor_ = limit_ = nullptr;
    in_use_bytes_ = 0;
    if constexpr (Config.statistics) counters_ = {};
    if constexpr (Config.checked) marks_.clear();
    ++cycle_;
  }

  // Free everything, keep chunks as the arena's default retention says.
  void reset() {
    reset(options_.default_retention);
  }

  // Free everything, keep chunks as `policy` says; every mark becomes stale.
  void reset(retention policy) {
    run_destructors(nullptr);
    update_high_water();
    detail::arena_chunk* all = chunks_;
    chunks_ = current_ = nullptr;
    cursor_ = limit_ = nullptr;
    in_use_bytes_ = 0;
    append(all, spare_);
    spare_ = nullptr;
    retain(all, policy);
    if constexpr (Config.statistics) counters_ = {};
    if constexpr (Config.checked) marks_.clear();
    ++cycle_;
    if (detail::arena_chunk* largest_spare = take_spare(0)) {
      link_in_use(largest_spare);
      make_current(largest_spare);
    }
  }

  // ---- statistics ----------------------------------------------------------

  // Counters since the last reset; not in minimal mode.
  arena_stats stats() const requires(Config.statistics) {
    arena_stats s;
    s.bytes_used = counters_.used;
    s.bytes_reserved = reserved_bytes_;
    s.alignment_waste = counters_.waste;
    s.peak_bytes_used = std::max(counters_.peak, counters_.used);
    s.allocations = counters_.allocations;
    s.chunks = count(chunks_) + count(spare_);
    return s;
  }

  // Start a new peak from the bytes in use now.
  void reset_peak() noexcept requires(Config.statistics) {
    counters_.peak = counters_.used;
  }

  // Bytes of chunks the arena holds, in use or spare.
  std::size_t bytes_reserved() const noexcept {
    return reserved_bytes_;
  }
  // Bytes left in the current chunk before the next growth.
  std::size_t bytes_left_in_chunk() const noexcept {
    return static_cast<std::size_t>(limit_ - cursor_);
  }

  bool is_equal(const monotonic_arena& other) const noexcept {
    return this == &other;
  }
  Upstream& upstream() noexcept {
    return upstream_;
  }
  // This resource's line in the memory ledger (strata/ledger.hpp).
  ledger_entry& ledger() noexcept {
    return ledger_;
  }
  const ledger_entry& ledger() const noexcept {
    return ledger_;
  }

 private:
  static constexpr std::size_t min_chunk_bytes = 256;
  static constexpr std::size_t max_bump_bytes = std::size_t{1} << 31;  // and up: bump_exact()
  static constexpr std::size_t chunk_alignment = 64;

  // The fast path: align the cursor, and take the block if the chunk holds it,
  // else return overflow() (the caller's answer, so a hit needs no null test).
  // `alignment` is a power of two. One compare against the limit decides a hit
  // (and one on the size, which folds away for a constant): the cursor and limit
  // are user-space addresses, below 2^63 on every 64-bit Linux, so rounding up
  // to any power of two and adding up to 2 GiB cannot wrap. Zero bytes and sizes
  // over 2 GiB take overflow(), which tries bump_exact() before growing.
  template <class Overflow>
  [[gnu::always_inline]] void* bump_or(std::size_t bytes, std::size_t alignment,
                                       Overflow overflow) {
    static_assert(sizeof(std::uintptr_t) == 8, "the one-compare bump needs 64-bit addresses");
    const std::uintptr_t mask = alignment - 1;  // a loop's caller keeps it in a register
    auto cursor = reinterpret_cast<std::uintptr_t>(cursor_);
    auto limit = reinterpret_cast<std::uintptr_t>(limit_);
    std::uintptr_t block = (cursor + mask) & ~mask;
    std::uintptr_t end = block + bytes;
    if (bytes - 1 >= max_bump_bytes || end > limit) [[unlikely]]
      return overflow();
    cursor_ = reinterpret_cast<char*>(end);
    if constexpr (Config.statistics) record(bytes, block - cursor, 1);
    return finish(reinterpret_cast<void*>(block), bytes);
  }

  // The bump for any size the fast path left: zero bytes take one, a rounding
  // that wraps past the top of the address space comes out below the cursor.
  // Null, and the arena as it was, when the current chunk cannot hold the block.
  [[gnu::noinline]] void* bump_exact(std::size_t bytes, std::size_t alignment) noexcept {
    bytes += bytes == 0;
    auto cursor = reinterpret_cast<std::uintptr_t>(cursor_);
    auto limit = reinterpret_cast<std::uintptr_t>(limit_);
    std::uintptr_t block = (cursor + alignment - 1) & ~(alignment - 1);
    if (block < cursor || block > limit || bytes > limit - block) return nullptr;
    cursor_ = reinterpret_cast<char*>(block + bytes);
    if constexpr (Config.statistics) record(bytes, block - cursor, 1);
    return finish(reinterpret_cast<void*>(block), bytes);
  }

  // Write the addresses of `count` blocks `stride` apart, two per 16-byte
  // store, in two independent streams so the stores issue back to back.
  static void carve(char* base, std::size_t stride, std::size_t count, void** out) noexcept {
    using pair = std::uintptr_t __attribute__((vector_size(16)));
    auto first = reinterpret_cast<std::uintptr_t>(base);
    pair even = {first, first + stride};
    pair odd = {first + 2 * stride, first + 3 * stride};
    const pair step = {4 * stride, 4 * stride};
    std::size_t i = 0;
    for (; i + 4 <= count; i += 4) {
      __builtin_memcpy(out + i, &even, sizeof even);
      __builtin_memcpy(out + i + 2, &odd, sizeof odd);
      even += step;
      odd += step;
    }
    for (std::size_t tail = count % 4; tail != 0; --tail, ++i) out[i] = base + i * stride;
  }

  // The tail of every successful allocation: hints for the cache and the tools.
  [[gnu::always_inline]] void* finish(void* block, [[maybe_unused]] std::size_t bytes) noexcept {
    if constexpr (Config.prefetch) __builtin_prefetch(block, 1, 3);
    annotate_allocated(block, bytes);
    return block;
  }

  // Count one or more blocks of `bytes` in all and `waste` bytes of padding.
  void record(std::size_t bytes, std::size_t waste, std::size_t blocks) noexcept {
    counters_.used += bytes;
    counters_.waste += waste;
    counters_.allocations += blocks;
  }

  // What the fast path refused: the exact bump, else (out of room in the current
  // chunk) reuse a spare chunk, or put a large request in a chunk of its own, or
  // take the next chunk of the growth policy.
  [[gnu::noinline]] void* allocate_slow(std::size_t bytes, std::size_t alignment) {
    check_alive("monotonic_arena::allocate");
    if (void* block = bump_exact(bytes, alignment)) return block;
    bytes += bytes == 0;
    std::size_t need;
    if (__builtin_add_overflow(bytes, alignment - 1, &need)) detail::throw_bad_alloc();
    if (detail::arena_chunk* spare = take_spare(need)) {
      link_in_use(spare);
      make_current(spare);
      return bump_exact(bytes, alignment);
    }
    std::size_t usable = next_chunk_bytes_ - detail::arena_chunk::header_bytes;
    if (need > usable / 2) {
      std::size_t chunk_bytes;
      if (__builtin_add_overflow(need, detail::arena_chunk::header_bytes, &chunk_bytes))
        detail::throw_bad_alloc();
      detail::arena_chunk* chunk = new_chunk(chunk_bytes, detail::arena_chunk::origin::oversize);
      link_in_use(chunk);
      auto block = align_up(reinterpret_cast<std::uintptr_t>(chunk->begin()), alignment);
      if constexpr (Config.statistics)
        record(bytes, block - reinterpret_cast<std::uintptr_t>(chunk->begin()), 1);
      return finish(reinterpret_cast<void*>(block), bytes);
    }
    detail::arena_chunk* chunk = new_chunk(next_chunk_bytes_, detail::arena_chunk::origin::normal);
    link_in_use(chunk);
    make_current(chunk);
    grow();
    return bump_exact(bytes, alignment);
  }

  // The next normal chunk is `factor` times this one, up to the cap.
  void grow() noexcept {
    const arena_growth& g = options_.growth;
    if (next_chunk_bytes_ >= g.max_chunk_bytes) return;
    next_chunk_bytes_ = next_chunk_bytes_ > g.max_chunk_bytes / g.factor
                            ? g.max_chunk_bytes
                            : next_chunk_bytes_ * g.factor;
  }

  // A chunk of `bytes` from the upstream, not yet linked anywhere.
  detail::arena_chunk* new_chunk(std::size_t bytes, detail::arena_chunk::origin kind) {
    auto* chunk = static_cast<detail::arena_chunk*>(upstream_.allocate(bytes, chunk_alignment));
    *chunk = {detail::arena_chunk_signature, nullptr, bytes, kind};
    reserved_bytes_ += bytes;
    ledger_.took(bytes);
    annotate_released(chunk->begin(), bytes - detail::arena_chunk::header_bytes);
    return chunk;
  }

  // Put `chunk` at the head of the in-use list.
  void link_in_use(detail::arena_chunk* chunk) noexcept {
    chunk->next = chunks_;
    chunks_ = chunk;
    in_use_bytes_ += chunk->bytes;
    high_water_in_cycle_ = std::max(high_water_in_cycle_, in_use_bytes_);
  }

  // Start bumping in `chunk`.
  void make_current(detail::arena_chunk* chunk) noexcept {
    current_ = chunk;
    cursor_ = chunk->begin();
    limit_ = chunk->end();
  }

  // Unlink and return a spare chunk with at least `need` usable bytes (the
  // largest when need is 0); null when none fits.
  detail::arena_chunk* take_spare(std::size_t need) noexcept {
    detail::arena_chunk** best = nullptr;
    for (detail::arena_chunk** link = &spare_; *link != nullptr; link = &(*link)->next) {
      std::size_t usable = (*link)->bytes - detail::arena_chunk::header_bytes;
      if (usable >= need && (best == nullptr || (*link)->bytes > (*best)->bytes)) best = link;
    }
    if (best == nullptr) return nullptr;
    detail::arena_chunk* chunk = *best;
    *best = chunk->next;
    chunk->next = nullptr;
    return chunk;
  }

  // Abort once the destructor has run: the arena's chunks are gone.
  void check_alive(const char* where) const {
    if (*static_cast<const volatile std::uint64_t*>(&birth_) == 0) [[unlikely]]
      detail::report_misuse("use of a destroyed monotonic_arena", where, this);
  }

  // Abort on a mark of another arena (one destroyed since, at this address,
  // too), a mark taken before a reset() or release(), or (checked) one rewound past.
  void check_mark(const arena_mark& m, const char* where) {
    check_alive(where);
    if (m.owner != this || m.birth != birth_) [[unlikely]]
      detail::report_misuse("foreign arena mark (taken on another arena)", where, m.owner);
    if (m.cycle != cycle_) [[unlikely]]
      detail::report_misuse("stale arena mark (taken before a reset or release)", where, m.cursor);
    if constexpr (Config.checked) {
      if (!marks_.rewind_to(m.serial)) [[unlikely]]
        detail::report_misuse("stale arena mark (rewound past or reset)", where, m.cursor);
    }
  }

  // Move back to `m`: chunks taken since become spare, oversize ones go back.
  void rewind_unchecked(const arena_mark& m) {
    run_destructors(m.destructors);
    while (chunks_ != m.chunks) {
      detail::arena_chunk* chunk = chunks_;
      chunks_ = chunk->next;
      in_use_bytes_ -= chunk->bytes;
      annotate_released(chunk->begin(), chunk->bytes - detail::arena_chunk::header_bytes);
      if (chunk->kind == detail::arena_chunk::origin::oversize) {
        give_back(chunk);
      } else {
        chunk->next = spare_;
        spare_ = chunk;
      }
    }
    current_ = m.current;
    cursor_ = m.cursor;
    limit_ = current_ != nullptr ? current_->end() : nullptr;
    if (cursor_ != nullptr) annotate_released(cursor_, static_cast<std::size_t>(limit_ - cursor_));
    if constexpr (Config.statistics) {
      counters_.peak = std::max(counters_.peak, counters_.used);
      counters_.used = m.used;
      counters_.waste = m.waste;
      counters_.allocations = m.allocations;
    }
  }

  // Decide which of `chunks` stay (as spares) under `policy`; free the rest.
  void retain(detail::arena_chunk* chunks, retention policy) {
    std::size_t keep_bytes = 0;
    switch (policy) {
      case retention::keep_everything:
        keep_bytes = SIZE_MAX;
        break;
      case retention::keep_largest:
        keep_bytes = largest(chunks);
        break;
      case retention::decaying_high_water:
        keep_bytes = high_water_;
        break;
      case retention::keep_nothing:
      case retention::release_to_os:
        keep_bytes = 0;
        break;
    }
    std::size_t kept = 0;
    while (chunks != nullptr) {
      detail::arena_chunk** pick = &chunks;  // largest first
      for (detail::arena_chunk** link = &chunks; *link != nullptr; link = &(*link)->next)
        if ((*link)->bytes > (*pick)->bytes) pick = link;
      detail::arena_chunk* chunk = *pick;
      *pick = chunk->next;
      annotate_released(chunk->begin(), chunk->bytes - detail::arena_chunk::header_bytes);
      bool fits = chunk->bytes <= keep_bytes - std::min(kept, keep_bytes);
      if (chunk->kind == detail::arena_chunk::origin::borrowed || fits) {
        if (chunk->kind == detail::arena_chunk::origin::oversize)
          chunk->kind = detail::arena_chunk::origin::normal;
        kept += chunk->bytes;
        chunk->next = spare_;
        spare_ = chunk;
      } else {
        give_back(chunk);
      }
    }
    if constexpr (releasing_resource<Upstream>)
      if (policy == retention::release_to_os) upstream_.release_unused();
  }

  // Fold this cycle's footprint into the decaying high-water mark.
  void update_high_water() noexcept {
    std::size_t decayed = high_water_ - high_water_ / 100 * options_.decay_percent;
    high_water_ = std::max(high_water_in_cycle_, decayed);
    high_water_in_cycle_ = 0;
  }

  // Run destructors registered after `until`, newest first.
  void run_destructors(detail::destructor_node* until) {
    while (destructors_ != until) {
      detail::destructor_node* node = destructors_;
      destructors_ = node->next;
      node->destroy(node->object, node->count);
    }
  }

  template <class T>
  static void destroy_objects(void* object, std::size_t count) {
    std::destroy_n(static_cast<T*>(object), count);
  }

  // Return one chunk to the upstream (a borrowed one is never freed).
  void give_back(detail::arena_chunk* chunk) {
    reserved_bytes_ -= chunk->bytes;
    annotate_allocated(chunk, chunk->bytes);
    if (chunk->kind == detail::arena_chunk::origin::borrowed) return;
    ledger_.gave(chunk->bytes);
    upstream_.deallocate(chunk, chunk->bytes, chunk_alignment);
  }

  // Return every chunk of a list.
  void release_list(detail::arena_chunk* list) {
    while (list != nullptr) {
      detail::arena_chunk* next = list->next;
      give_back(list);
      list = next;
    }
  }

  static void append(detail::arena_chunk*& list, detail::arena_chunk* tail) noexcept {
    detail::arena_chunk** link = &list;
    while (*link != nullptr) link = &(*link)->next;
    *link = tail;
  }
  static std::size_t largest(detail::arena_chunk* list) noexcept {
    std::size_t bytes = 0;
    for (; list != nullptr; list = list->next) bytes = std::max(bytes, list->bytes);
    return bytes;
  }
  static std::size_t count(detail::arena_chunk* list) noexcept {
    std::size_t n = 0;
    for (; list != nullptr; list = list->next) ++n;
    return n;
  }

  // The fast path's state first, on one cache line.
  char* cursor_ = nullptr;
  char* limit_ = nullptr;
  [[no_unique_address]] std::conditional_t<Config.statistics, detail::arena_counters,
                                           detail::no_counters>
      counters_;
  detail::arena_chunk* current_ = nullptr;
  detail::arena_chunk* chunks_ = nullptr;  // in use, newest first
  detail::arena_chunk* spare_ = nullptr;   // held for reuse
  detail::destructor_node* destructors_ = nullptr;
  std::size_t next_chunk_bytes_ = 0;
  std::size_t reserved_bytes_ = 0;
  std::size_t in_use_bytes_ = 0;
  std::size_t high_water_in_cycle_ = 0;
  std::size_t high_water_ = 0;
  [[no_unique_address]] std::conditional_t<Config.checked, detail::open_marks, detail::no_marks>
      marks_;
  [[no_unique_address]] Upstream upstream_;
  arena_options options_;
  std::uint64_t birth_ = detail::next_arena_birth.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t cycle_ = 0;  // resets and releases so far: marks of an earlier cycle are stale
  ledger_entry ledger_{"monotonic_arena", upstream_};
};

// Rewinds its arena to the position it was created at, on scope exit.
template <class Arena>
class scoped_mark {
 public:
  explicit scoped_mark(Arena& arena) : arena_(arena), mark_(arena.mark()) {}
  scoped_mark(const scoped_mark&) = delete;
  scoped_mark& operator=(const scoped_mark&) = delete;
  ~scoped_mark() { arena_.rewind_and_close(mark_); }

  const arena_mark& mark() const noexcept { return mark_; }

 private:
  Arena& arena_;
  arena_mark mark_;
};

}  // namespace strata

#endif  // STRATA_ARENA_HPP
