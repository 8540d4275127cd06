// Every C++ operator new / delete form, called both through expressions and directly:
// plain, array, nothrow, sized, align_val_t, aligned+sized and aligned+nothrow, with
// their failure behaviour (std::bad_alloc, nullptr, and the new-handler).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <new>

#include "check.h"

namespace {

// A size no allocator can satisfy, opaque to the optimiser.
volatile std::size_t impossible_size = std::numeric_limits<std::size_t>::max() / 2;

bool is_aligned(const void* pointer, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(pointer) % alignment == 0;
}

// A type whose alignment exceeds the default new alignment, so `new` uses align_val_t.
struct alignas(256) over_aligned {
  unsigned char bytes[300];
};

// The direct calls: every replaceable operator, each paired with its own delete.
void check_direct_calls() {
  for (std::size_t size : {1u, 16u, 100u, 4000u, 100000u, 3000000u}) {
    void* plain = ::operator new(size);
    std::memset(plain, 1, size);
    ::operator delete(plain);
    plain = ::operator new(size);
    ::operator delete(plain, size);
    void* array = ::operator new[](size);
    std::memset(array, 2, size);
    ::operator delete[](array);
    array = ::operator new[](size);
    ::operator delete[](array, size);
    void* quiet = ::operator new(size, std::nothrow);
    CHECK(quiet != nullptr, "nothrow new(%zu)", size);
    ::operator delete(quiet, std::nothrow);
    quiet = ::operator new[](size, std::nothrow);
    CHECK(quiet != nullptr, "nothrow new[](%zu)", size);
    ::operator delete[](quiet, std::nothrow);

    for (std::size_t alignment = 1; alignment <= (2u << 20); alignment *= 4) {
      const auto align = static_cast<std::align_val_t>(alignment);
      void* aligned = ::operator new(size, align);
      CHECK(is_aligned(aligned, alignment), "new(%zu, align %zu)", size, alignment);
      std::memset(aligned, 3, size);
      ::operator delete(aligned, align);
      aligned = ::operator new(size, align);
      ::operator delete(aligned, size, align);
      aligned = ::operator new[](size, align);
      CHECK(is_aligned(aligned, alignment), "new[](%zu, align %zu)", size, alignment);
      ::operator delete[](aligned, align);
      aligned = ::operator new[](size, align);
      ::operator delete[](aligned, size, align);
      aligned = ::operator new(size, align, std::nothrow);
      CHECK(aligned != nullptr && is_aligned(aligned, alignment), "nothrow aligned new");
      ::operator delete(aligned, align, std::nothrow);
      aligned = ::operator new[](size, align, std::nothrow);
      CHECK(aligned != nullptr && is_aligned(aligned, alignment), "nothrow aligned new[]");
      ::operator delete[](aligned, align, std::nothrow);
    }
  }
  // Alignments of 32 and 64 MiB, as glibc serves them.
  for (std::size_t alignment : {std::size_t{32} << 20, std::size_t{64} << 20}) {
    const auto align = static_cast<std::align_val_t>(alignment);
    void* aligned = ::operator new(4096, align);
    CHECK(is_aligned(aligned, alignment), "new(4096, align %zu)", alignment);
    std::memset(aligned, 3, 4096);
    ::operator delete(aligned, align);
  }
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  ::operator delete (nullptr, std::align_val_t{64});
}

// Sizes that are multiples of the alignment, where a size-class shortcut is tempting
// (mimalloc 2.0.9 returns 128-aligned blocks for new(256, align_val_t{256})).
void check_alignment_multiples() {
  for (std::size_t alignment = 16; alignment <= (1u << 20); alignment *= 2) {
    const auto align = static_cast<std::align_val_t>(alignment);
    for (std::size_t multiple = 1; multiple <= 3; ++multiple) {
      const std::size_t size = alignment * multiple;
      void* blocks[8];
      for (auto& block : blocks) {
        block = ::operator new(size, align);
        CHECK(is_aligned(block, alignment), "new(%zu, align %zu) = %p", size, alignment, block);
      }
      for (auto* block : blocks) ::operator delete(block, size, align);
    }
  }
}

// The expression forms, which the compiler lowers to sized and aligned operators.
void check_expressions() {
  for (int round = 0; round < 100; ++round) {
    auto* number = new long(round);
    delete number;
    auto* numbers = new long[round + 1]();
    CHECK(numbers[round] == 0, "new long[]() not zeroed");
    delete[] numbers;
    auto* wide = new over_aligned();
    CHECK(is_aligned(wide, alignof(over_aligned)), "new over_aligned");
    delete wide;
    auto* wides = new over_aligned[round + 1];
    CHECK(is_aligned(wides, alignof(over_aligned)), "new over_aligned[]");
    delete[] wides;
    auto* quiet = new (std::nothrow) over_aligned;
    CHECK(quiet != nullptr, "new (nothrow) over_aligned");
    delete quiet;
  }
}

// Failures: throwing forms throw std::bad_alloc, nothrow forms return nullptr.
void check_failures() {
  const std::size_t size = impossible_size;
  const auto align = std::align_val_t{64};
  bool threw = false;
  try {
    ::operator delete(::operator new(size));
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  CHECK(threw, "new(huge) did not throw");
  threw = false;
  try {
    ::operator delete[](::operator new[](size, align), align);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  CHECK(threw, "aligned new[](huge) did not throw");
  CHECK(::operator new(size, std::nothrow) == nullptr, "nothrow new(huge)");
  CHECK(::operator new[](size, std::nothrow) == nullptr, "nothrow new[](huge)");
  CHECK(::operator new(size, align, std::nothrow) == nullptr, "nothrow aligned new(huge)");
  CHECK(::operator new[](size, align, std::nothrow) == nullptr, "nothrow aligned new[](huge)");
}

int handler_calls = 0;

// A new-handler that gives up after its third call.
void counting_new_handler() {
  if (++handler_calls == 3) std::set_new_handler(nullptr);
}

// A failing new calls the installed new-handler until it is removed, then throws.
void check_new_handler() {
  std::set_new_handler(counting_new_handler);
  bool threw = false;
  try {
    ::operator delete(::operator new(impossible_size));
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  CHECK(threw && handler_calls == 3, "new-handler called %d times (want 3)", handler_calls);
  handler_calls = 0;
  std::set_new_handler(counting_new_handler);
  CHECK(::operator new(impossible_size, std::nothrow) == nullptr, "nothrow new with handler");
  CHECK(handler_calls == 3, "nothrow new: new-handler called %d times", handler_calls);
  std::set_new_handler(nullptr);
}

}  // namespace

int main() {
  check_direct_calls();
  check_alignment_multiples();
  check_expressions();
  check_failures();
  check_new_handler();
  std::puts("operator new ok");
  return 0;
}
