// Linux implementation of the OS layer (mmap, madvise, mprotect, /proc).
#include "os/os.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

namespace strata::os {
namespace {

thread_local failure last = {nullptr, 0};
std::atomic<std::uint64_t> calls{0};
std::atomic<std::uint64_t> fail_at{0};  // call number that must fail; 0 = none

// Count a call and report whether failure injection says it must fail.
bool injected_failure(const char* call) noexcept {
  std::uint64_t n = calls.fetch_add(1, std::memory_order_relaxed) + 1;
  std::uint64_t target = fail_at.load(std::memory_order_relaxed);
  if (target != 0 && n == target) {
    fail_at.store(0, std::memory_order_relaxed);
    last = {call, ECANCELED};
    return true;
  }
  return false;
}

bool fail(const char* call) noexcept {
  last = {call, errno};
  return false;
}

constexpr int map_flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_FIXED_NOREPLACE
constexpr int map_at_flags = map_flags | MAP_FIXED_NOREPLACE;
#else
constexpr int map_at_flags = map_flags;
#endif

// Map `size` bytes at `at` and nowhere else: null when something lives there
// (last_failure() keeps the reason the caller recorded before).
// Kernels before 4.17 take MAP_FIXED_NOREPLACE as a mere hint, hence the check.
void* map_exactly_at(std::uintptr_t at, std::size_t size, int prot) noexcept {
  void* want = reinterpret_cast<void*>(at);
  void* p = ::mmap(want, size, prot, map_at_flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (p == want) return p;
  ::munmap(p, size);
  return nullptr;
}

// The last resort of reserve_aligned: over-reserve by the alignment and trim
// the unaligned head and the tail. Needs size + alignment of address space at once.
void* map_trimmed(std::size_t size, std::size_t alignment, int prot) noexcept {
  std::size_t span = size + alignment - page_size();
  void* raw = ::mmap(nullptr, span, prot, map_flags, -1, 0);
  if (raw == MAP_FAILED) {
    fail("reserve");
    return nullptr;
  }
  auto base = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t aligned = (base + alignment - 1) & ~(alignment - 1);
  std::size_t head = aligned - base;
  std::size_t tail = span - head - size;
  if (head != 0) ::munmap(raw, head);
  if (tail != 0) ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  return reinterpret_cast<void*>(aligned);
}

// Where the latest aligned reservation starts. The kernel maps top-down, so the
// aligned address just below it is usually free: trying it first makes a
// reservation one mmap even when its size is not a multiple of the alignment.
std::atomic<std::uintptr_t> lowest_aligned{0};

// `size` bytes aligned to `alignment` (above the page size), in as few calls
// as the layout allows and, unless the gaps are too small for an aligned fit,
// never more than `size` bytes of address space at once.
void* map_aligned(std::size_t size, std::size_t alignment, int prot) noexcept {
  std::uintptr_t lowest = lowest_aligned.load(std::memory_order_relaxed);
  if (lowest > size + alignment) {
    if (void* p = map_exactly_at((lowest - size) & ~(alignment - 1), size, prot)) return p;
  }
  // The exact size where the kernel puts it: often aligned by itself.
  void* raw = ::mmap(nullptr, size, prot, map_flags, -1, 0);
  if (raw == MAP_FAILED) {
    fail("reserve");
    return nullptr;
  }
  auto base = reinterpret_cast<std::uintptr_t>(raw);
  if ((base & (alignment - 1)) == 0) return raw;
  ::munmap(raw, size);
  // The free gap it came from usually extends below it: the aligned address
  // there fits it in the same room.
  std::uintptr_t below = base & ~(alignment - 1);
  if (below != 0) {
    if (void* p = map_exactly_at(below, size, prot)) return p;
  }
  if (void* p = map_trimmed(size, alignment, prot)) return p;
  // No room for the over-reservation: the aligned address above, where a
  // bottom-up layout leaves the gap.
  return map_exactly_at(below + alignment, size, prot);
}

// Parse the first decimal number after `key` in a small /proc file.
std::size_t read_proc_number(const char* path, const char* key, std::size_t field) noexcept {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* s = buf;
  if (key != nullptr) {
    for (; *s != 0; ++s) {
      const char* a = s;
      const char* k = key;
      while (*k != 0 && *a == *k) ++a, ++k;
      if (*k == 0) {
        s = a;
        break;
      }
    }
    if (*s == 0) return 0;
  }
  for (std::size_t i = 0;; ++i) {  // skip to the requested whitespace-separated field
    while (*s == ' ' || *s == '\t') ++s;
    if (i == field) break;
    while (*s != 0 && *s != ' ' && *s != '\t') ++s;
    if (*s == 0) return 0;
  }
  std::size_t v = 0;
  while (*s >= '0' && *s <= '9') v = v * 10 + static_cast<std::size_t>(*s++ - '0');
  return v;
}

// A value the process computes on first use. Racing threads compute the same
// answer, so a relaxed atomic (0: not yet) stands in for a guarded static.
template <class Compute>
std::size_t on_first_use(std::atomic<std::size_t>& cache, Compute compute) noexcept {
  std::size_t value = cache.load(std::memory_order_relaxed);
  if (value == 0) {
    value = compute();
    cache.store(value, std::memory_order_relaxed);
  }
  return value;
}

std::atomic<std::size_t> page_size_cache{0};
std::atomic<std::size_t> huge_page_size_cache{0};
std::atomic<std::size_t> huge_pages_mode_cache{0};  // 1: not always, 2: always

}  // namespace

std::size_t page_size() noexcept {
  return on_first_use(page_size_cache,
                      [] { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); });
}

std::size_t huge_page_size() noexcept {
  return on_first_use(huge_page_size_cache, [] {
    std::size_t kb = read_proc_number("/proc/meminfo", "Hugepagesize:", 0);
    return kb != 0 ? kb * 1024 : std::size_t{2} << 20;
  });
}

bool huge_pages_always() noexcept {
  return on_first_use(huge_pages_mode_cache, []() -> std::size_t {
           int fd = ::open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
           if (fd < 0) return 1;
           char buf[128];
           ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
           ::close(fd);
           if (n <= 0) return 1;
           buf[n] = 0;
           // The mode in force is bracketed.
           return std::strstr(buf, "[always]") != nullptr ? 2 : 1;
         }) == 2;
}

void* reserve_aligned(std::size_t size, std::size_t alignment, bool accessible) noexcept {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) {
    last = {"reserve", EINVAL};
    return nullptr;
  }
  if (alignment < page_size()) alignment = page_size();
  if (size > SIZE_MAX - alignment) {
    last = {"reserve", ENOMEM};
    return nullptr;
  }
  if (injected_failure("reserve")) return nullptr;
  int prot = accessible ? PROT_READ | PROT_WRITE : PROT_NONE;
  if (alignment == page_size()) {
    void* raw = ::mmap(nullptr, size, prot, map_flags, -1, 0);
    if (raw != MAP_FAILED) return raw;
    fail("reserve");
    return nullptr;
  }
  void* p = map_aligned(size, alignment, prot);
  if (p != nullptr)
    lowest_aligned.store(reinterpret_cast<std::uintptr_t>(p), std::memory_order_relaxed);
  return p;
}

void* reserve_at(void* at, std::size_t size) noexcept {
  if (injected_failure("reserve")) return nullptr;
  void* p = ::mmap(at, size, PROT_READ | PROT_WRITE, map_at_flags, -1, 0);
  if (p == MAP_FAILED) {
    fail("reserve");
    return nullptr;
  }
  if (p == at) return p;
  // A kernel before 4.17 took the address as a hint: the range is taken.
  ::munmap(p, size);
  last = {"reserve", EEXIST};
  return nullptr;
}

bool release(void* p, std::size_t size) noexcept {
  if (injected_failure("release")) return false;
  if (::munmap(p, size) != 0) return fail("release");
  // The next aligned reservation then tries the range given back first.
  auto start = reinterpret_cast<std::uintptr_t>(p);
  lowest_aligned.compare_exchange_strong(start, start + size, std::memory_order_relaxed);
  return true;
}

bool commit(void* p, std::size_t size) noexcept {
  if (injected_failure("commit")) return false;
  return ::mprotect(p, size, PROT_READ | PROT_WRITE) == 0 || fail("commit");
}

bool decommit(void* p, std::size_t size) noexcept {
  if (injected_failure("decommit")) return false;
  if (::madvise(p, size, MADV_DONTNEED) != 0) return fail("decommit");
  return ::mprotect(p, size, PROT_NONE) == 0 || fail("decommit");
}

bool purge(void* p, std::size_t size, purge_mode mode) noexcept {
  if (injected_failure("purge")) return false;
  int advice = mode == purge_mode::lazy_free ? MADV_FREE : MADV_DONTNEED;
  if (::madvise(p, size, advice) == 0) return true;
  // Kernels before 4.5 lack MADV_FREE: fall back to the eager form.
  if (advice == MADV_FREE && errno == EINVAL)
    return ::madvise(p, size, MADV_DONTNEED) == 0 || fail("purge");
  return fail("purge");
}

bool protect(void* p, std::size_t size) noexcept {
  if (injected_failure("protect")) return false;
  return ::mprotect(p, size, PROT_NONE) == 0 || fail("protect");
}

bool unprotect(void* p, std::size_t size) noexcept {
  if (injected_failure("protect")) return false;
  return ::mprotect(p, size, PROT_READ | PROT_WRITE) == 0 || fail("protect");
}

bool hint_huge_pages(void* p, std::size_t size) noexcept {
  if (injected_failure("hint_huge_pages")) return false;
  return ::madvise(p, size, MADV_HUGEPAGE) == 0 || fail("hint_huge_pages");
}

bool extend_in_place(void* p, std::size_t old_size, std::size_t new_size) noexcept {
  if (injected_failure("extend")) return false;
  void* q = ::mremap(p, old_size, new_size, 0);
  return q != MAP_FAILED || fail("extend");
}

void* move_aligned(void* p, std::size_t old_size, std::size_t new_size,
                   std::size_t alignment) noexcept {
  void* target = reserve_aligned(new_size, alignment, false);
  if (target == nullptr) return nullptr;
  if (injected_failure("move")) {
    ::munmap(target, new_size);
    return nullptr;
  }
  void* q = ::mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  if (q == MAP_FAILED) {
    fail("move");
    ::munmap(target, new_size);
    return nullptr;
  }
  return q;
}

std::size_t current_rss() noexcept {
  return read_proc_number("/proc/self/statm", nullptr, 1) * page_size();
}

std::size_t peak_rss() noexcept {
  // The kernel folds per-thread RSS counters in lazily, so the high-water mark
  // can trail the current reading by a few pages.
  std::size_t hwm = read_proc_number("/proc/self/status", "VmHWM:", 0) * 1024;
  std::size_t now = current_rss();
  return hwm > now ? hwm : now;
}

failure last_failure() noexcept {
  return last;
}

std::uint64_t call_count() noexcept {
  return calls.load(std::memory_order_relaxed);
}

void inject_failure(std::uint64_t nth) noexcept {
  fail_at.store(nth == 0 ? 0 : calls.load(std::memory_order_relaxed) + nth,
                std::memory_order_relaxed);
}

void wait_on(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
             std::int64_t timeout_ms) noexcept {
  static_assert(sizeof(word) == sizeof(std::uint32_t), "a futex is one 32-bit word");
  struct timespec timeout {};
  timeout.tv_sec = static_cast<time_t>(timeout_ms / 1000);
  timeout.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1000000;
  ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, expected, timeout_ms < 0 ? nullptr : &timeout,
            nullptr, 0);
}

void wake_all(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace strata::os
