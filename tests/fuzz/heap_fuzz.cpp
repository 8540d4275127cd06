// Fuzz the strata heap through its C API: malloc, calloc, realloc, free,
// the aligned forms, usable_size, expand, batches and first-class heaps, with
// edge sizes and alignments, against the shadow model. Impossible requests
// must fail with NULL and the POSIX errno; statistics must add up.
#include <strata/strata.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_input.hpp"
#include "shadow.hpp"

namespace {

using strata::fuzz::check;
using strata::fuzz::fuzz_input;
using strata::fuzz::shadow;

constexpr std::size_t mib = std::size_t{1} << 20;
// Live bytes the shadow allows: a run stays well inside libFuzzer's RSS limit.
constexpr std::size_t budget = 64 * mib;
// Sizes no allocation can satisfy: each must give NULL and ENOMEM.
constexpr std::size_t impossible = std::size_t{1} << 62;

// The default heap is owner 0; first-class heaps are 1 and 2.
constexpr unsigned heaps = 3;

// A size: an edge case, a small one, a medium one, now and then a large one.
std::size_t pick_size(fuzz_input& in) {
  switch (in.byte() % 16) {
    case 0:
    case 1:
    case 2:
    case 3:
      return in.pick<std::size_t>({0,
                                   1,
                                   15,
                                   16,
                                   17,
                                   127,
                                   128,
                                   1023,
                                   1024,
                                   4095,
                                   4096,
                                   4097,
                                   65536,
                                   8 * mib,
                                   8 * mib + 1,
                                   SIZE_MAX,
                                   SIZE_MAX - 1,
                                   SIZE_MAX - 4096,
                                   SIZE_MAX / 2,
                                   SIZE_MAX / 2 + 1,
                                   impossible});
    case 15:
      return in.number(3) % (12 * mib);
    default:
      return in.byte() % 2 ? in.below(256) : in.below(65536);
  }
}

// An alignment: an edge case (some invalid), or any power of two up to 16 MiB.
std::size_t pick_alignment(fuzz_input& in) {
  if (in.byte() % 2 == 0)
    return in.pick<std::size_t>({0, 1, 3, 8, 16, 24, 64, 4096, mib, std::size_t{1} << 63, SIZE_MAX,
                                 (std::size_t{1} << 63) + 1});
  return std::size_t{1} << in.below(25);
}

bool power_of_two(std::size_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

// Whether a request of `bytes` is one the heap must refuse.
bool must_fail(std::size_t bytes) {
  return bytes >= impossible;
}

// One run of operations over the default heap and up to two first-class heaps.
class heap_run {
 public:
  explicit heap_run(fuzz_input& in) : in_(in) { strata_stats_get(&start_); }

  void step() {
    switch (in_.byte() % 14) {
      case 0:
        return do_malloc();
      case 1:
        return do_calloc();
      case 2:
        return do_realloc();
      case 3:
        return do_free();
      case 4:
        return do_malloc_aligned();
      case 5:
        return do_posix_memalign();
      case 6:
        return do_usable_size();
      case 7:
        return do_expand();
      case 8:
        return do_batch();
      case 9:
        return do_heap_new();
      case 10:
        return do_heap_malloc();
      case 11:
        return do_heap_destroy();
      case 12:
        return do_free_sized();
      default:
        return shadow_.verify_all();
    }
  }

  // Free everything, check the patterns, then check the counts came back.
  void finish() {
    while (shadow_.size() != 0) {
      void* p = reinterpret_cast<void*>(shadow_.nth(0));
      shadow_.remove(p);
      strata_free(p);
    }
    for (unsigned h = 1; h < heaps; ++h)
      if (heap_[h] != nullptr) strata_heap_destroy(heap_[h]);
    strata_stats_t end;
    strata_stats_get(&end);
    check(end.mallocs - start_.mallocs == end.frees - start_.frees,
          "stats: mallocs and frees of a run that freed everything differ", nullptr,
          (end.mallocs - start_.mallocs) - (end.frees - start_.frees));
  }

 private:
  // Record a successful block, or check a failure was allowed and said why.
  void take(void* p, std::size_t bytes, std::size_t alignment, unsigned owner) {
    if (p == nullptr) {
      check(errno == ENOMEM, "failed allocation without ENOMEM", nullptr, bytes);
      check(must_fail(bytes) || alignment > 16 * mib || bytes > budget,
            "a possible allocation failed", nullptr, bytes);
      return;
    }
    check(!must_fail(bytes), "an impossible allocation succeeded", p, bytes);
    check(strata_usable_size(p) >= bytes, "usable size below the size asked", p, bytes);
    shadow_.add(p, bytes, alignment, owner);
  }

  // Whether a new block of `bytes` keeps the run inside its budget.
  bool affordable(std::size_t bytes) const {
    return must_fail(bytes) || (bytes <= budget && shadow_.live_bytes() + bytes <= budget);
  }

  // A live block of the shadow, or null when there is none.
  void* any_live() {
    if (shadow_.size() == 0) return nullptr;
    return reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
  }

  void do_malloc() {
    std::size_t bytes = pick_size(in_);
    if (!affordable(bytes)) return;
    errno = 0;
    take(strata_malloc(bytes), bytes, 16, 0);
  }

  void do_calloc() {
    std::size_t count = in_.pick<std::size_t>({0, 1, 2, 3, 16, 1000, SIZE_MAX, SIZE_MAX / 2 + 1});
    std::size_t size = pick_size(in_);
    std::size_t bytes;
    bool overflows = __builtin_mul_overflow(count, size, &bytes);
    errno = 0;
    if (overflows) {
      void* p = strata_calloc(count, size);
      check(p == nullptr && errno == ENOMEM, "calloc of an overflowing size", p, size);
      return;
    }
    if (!affordable(bytes)) return;
    void* p = strata_calloc(count, size);
    if (p != nullptr) {
      const auto* zero = static_cast<const unsigned char*>(p);
      for (std::size_t i = 0; i < bytes && i < 2 * shadow::pattern_span; ++i)
        check(zero[i] == 0, "calloc block not zeroed", p, i);
    }
    take(p, bytes, 16, 0);
  }

  void do_realloc() {
    void* p = any_live();
    std::size_t bytes = pick_size(in_);
    if (!affordable(bytes)) return;
    if (p == nullptr) {
      errno = 0;
      take(strata_realloc(nullptr, bytes), bytes, 16, 0);
      return;
    }
    const strata::fuzz::live_block old = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    if (old.owner != 0) return;  // realloc moves a block to the default heap
    errno = 0;
    void* q = strata_realloc(p, bytes);
    if (q == nullptr) {
      check(errno == ENOMEM, "failed realloc without ENOMEM", p, bytes);
      check(must_fail(bytes) || bytes > budget, "a possible realloc failed", p, bytes);
      return;  // the old block is untouched and still live
    }
    check(!must_fail(bytes), "an impossible realloc succeeded", q, bytes);
    shadow_.take_out(p);
    shadow::verify_prefix(q, old, bytes);  // what the block kept is the old block's
    shadow_.add(q, bytes, 16, 0);
  }

  void do_free() {
    if (void* p = any_live()) {
      shadow_.remove(p);
      strata_free(p);
    }
  }

  void do_free_sized() {
    if (void* p = any_live()) {
      std::size_t bytes = shadow_.at(reinterpret_cast<std::uintptr_t>(p)).bytes;
      shadow_.remove(p);
      strata_free_sized(p, bytes);
    }
  }

  void do_malloc_aligned() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    if (!affordable(bytes) || !affordable(alignment)) return;
    errno = 0;
    void* p = in_.byte() % 2 ? strata_malloc_aligned(bytes, alignment)
                             : strata_aligned_alloc(alignment, bytes);
    if (!power_of_two(alignment)) {
      check(p == nullptr && errno == EINVAL, "bad alignment without NULL and EINVAL", p, alignment);
      return;
    }
    take(p, bytes, alignment, 0);
  }

  void do_posix_memalign() {
    std::size_t bytes = pick_size(in_);
    std::size_t alignment = pick_alignment(in_);
    if (!affordable(bytes) || !affordable(alignment)) return;
    void* p = reinterpret_cast<void*>(std::uintptr_t{0x1});
    errno = 12345;
    int result = strata_posix_memalign(&p, alignment, bytes);
    check(errno == 12345, "posix_memalign changed errno", nullptr, alignment);
    if (!power_of_two(alignment) || alignment < sizeof(void*)) {
      check(result == EINVAL, "posix_memalign: bad alignment without EINVAL", nullptr, alignment);
      return;
    }
    if (result != 0) {
      check(result == ENOMEM, "posix_memalign failed without ENOMEM", nullptr, bytes);
      check(must_fail(bytes) || alignment > 16 * mib, "a possible posix_memalign failed", nullptr,
            bytes);
      return;
    }
    errno = 0;
    take(p, bytes, alignment, 0);
  }

  void do_usable_size() {
    if (void* p = any_live())
      check(strata_usable_size(p) >= shadow_.at(reinterpret_cast<std::uintptr_t>(p)).bytes,
            "usable size below the size asked", p);
  }

  void do_expand() {
    void* p = any_live();
    if (p == nullptr) return;
    const strata::fuzz::live_block old = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    std::size_t bytes = pick_size(in_);
    if (!affordable(bytes)) return;
    void* q = strata_expand(p, bytes);
    if (q == nullptr) return;  // could not: the block is as it was
    check(q == p, "expand moved the block", q);
    check(!must_fail(bytes), "an impossible expand succeeded", q, bytes);
    check(strata_usable_size(p) >= bytes, "expanded block smaller than asked", p, bytes);
    shadow_.take_out(p);
    shadow::verify_prefix(p, old, bytes);
    shadow_.add(p, bytes, 1, old.owner);
  }

  void do_batch() {
    std::size_t bytes = in_.pick<std::size_t>({0, 1, 16, 48, 1024, 4096, 70000});
    std::size_t count = in_.below(40);
    if (!affordable(bytes * count)) return;
    void* blocks[40];
    errno = 0;
    std::size_t got = strata_malloc_batch(bytes, count, blocks);
    check(got == count, "batch gave fewer blocks than asked", nullptr, got);
    for (std::size_t i = 0; i < got; ++i) shadow_.add(blocks[i], bytes, 16, 0);
    if (in_.byte() % 2 == 0) {
      for (std::size_t i = 0; i < got; ++i) shadow_.remove(blocks[i]);
      strata_free_batch(blocks, got);
    }
  }

  void do_heap_new() {
    unsigned h = 1 + in_.byte() % (heaps - 1);
    if (heap_[h] != nullptr) return;
    heap_[h] = strata_heap_new();
    check(heap_[h] != nullptr, "strata_heap_new failed");
  }

  void do_heap_malloc() {
    unsigned h = 1 + in_.byte() % (heaps - 1);
    if (heap_[h] == nullptr) return;
    std::size_t bytes = pick_size(in_);
    if (!affordable(bytes)) return;
    errno = 0;
    if (in_.byte() % 2 == 0) {
      std::size_t alignment = std::size_t{1} << in_.below(13);
      take(strata_heap_malloc_aligned(heap_[h], bytes, alignment), bytes, alignment, h);
    } else {
      take(strata_heap_malloc(heap_[h], bytes), bytes, 16, h);
    }
  }

  void do_heap_destroy() {
    unsigned h = 1 + in_.byte() % (heaps - 1);
    if (heap_[h] == nullptr) return;
    shadow_.verify_all();
    shadow_.drop_owner(h);
    strata_heap_destroy(heap_[h]);
    heap_[h] = nullptr;
  }

  fuzz_input& in_;
  shadow shadow_;
  strata_heap_t* heap_[heaps] = {};
  strata_stats_t start_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  heap_run run(in);
  for (int steps = 0; steps < 400 && !in.done(); ++steps) run.step();
  run.finish();
  return 0;
}
