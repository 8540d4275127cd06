// The replay loop. Its own memory (the block table and the read buffer) comes
// from mmap and is touched before the measurement starts, and the peak RSS the
// kernel keeps is reset then (/proc/self/clear_refs), so the peak measured is
// the allocator's: what the replayed blocks and the allocator's own metadata
// and caching cost, above what the process held before the first call.
#include "replay_worker.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "replay_plan.hpp"

namespace strata_replay {

namespace {

struct held_block {
  char* address;
  std::uint64_t size;
};

constexpr std::size_t steps_per_read = 1 << 16;

// Monotonic nanoseconds.
std::uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// A field of /proc/self/status in bytes (VmRSS, VmHWM), read without malloc.
std::uint64_t status_bytes(const char* field) {
  char text[4096];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* at = std::strstr(text, field);
  if (at == nullptr) return 0;
  return std::strtoull(at + std::strlen(field), nullptr, 10) * 1024;
}

// Resets the kernel's peak RSS to the current RSS; false where not allowed.
bool reset_peak_rss() {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

// Memory straight from the kernel, faulted in now.
void* touched_mapping(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0, bytes);
  return p;
}

// Writes the first and last byte and one in every 4 KiB between, as a program
// filling its block would: every page of every block is resident, so peak RSS
// over peak live bytes measures the allocator, not how much of the blocks the
// replay happened to write.
void touch(char* p, std::uint64_t size) {
  if (p == nullptr || size == 0) return;
  auto* bytes = static_cast<volatile char*>(p);
  for (std::uint64_t i = 0; i < size; i += 4096) bytes[i] = 1;
  bytes[size - 1] = 1;
}

// One step against the process's allocator; false when an allocation failed.
bool execute(const step& s, held_block& block) {
  switch (s.what) {
    case action::allocate:
      block = {static_cast<char*>(std::malloc(s.size)), s.size};
      break;
    case action::allocate_zeroed:
      block = {static_cast<char*>(std::calloc(1, s.size)), s.size};
      break;
    case action::allocate_aligned: {
      std::size_t alignment = std::size_t{1} << s.alignment_log2;
      if (alignment < sizeof(void*)) alignment = sizeof(void*);
      void* p = nullptr;
      if (posix_memalign(&p, alignment, s.size) != 0) p = nullptr;
      block = {static_cast<char*>(p), s.size};
      break;
    }
    case action::resize: {
      void* p = std::realloc(block.address, s.size);
      if (p == nullptr && s.size != 0) return false;
      block = {static_cast<char*>(p), s.size};
      break;
    }
    case action::release:
      std::free(block.address);
      block = {nullptr, 0};
      return true;
  }
  if (block.address == nullptr && s.size != 0) {
    block.size = 0;
    return false;
  }
  touch(block.address, block.size);
  return true;
}

}  // namespace

int run_worker(int fd, std::uint32_t slots) {
  auto* table = static_cast<held_block*>(touched_mapping((slots + 1) * sizeof(held_block)));
  auto* buffer = static_cast<step*>(touched_mapping(steps_per_read * sizeof(step)));
  if (table == nullptr || buffer == nullptr || lseek(fd, 0, SEEK_SET) != 0) return 1;
  replay_result result;
  bool peak_reset = reset_peak_rss();
  std::uint64_t baseline = status_bytes("VmRSS:");
  std::uint64_t live = 0;
  std::uint64_t start = now_ns();
  for (;;) {
    ssize_t got = read(fd, buffer, steps_per_read * sizeof(step));
    if (got < 0) return 1;
    if (got == 0) break;
    std::size_t count = static_cast<std::size_t>(got) / sizeof(step);
    for (std::size_t i = 0; i < count; ++i) {
      const step& s = buffer[i];
      held_block& block = table[s.slot];
      live -= block.size;
      if (!execute(s, block)) ++result.failures;
      live += block.size;
      if (live > result.peak_live_bytes) result.peak_live_bytes = live;
    }
  }
  result.time_ns = now_ns() - start;
  std::uint64_t peak = status_bytes(peak_reset ? "VmHWM:" : "VmRSS:");
  result.peak_rss_bytes = peak > baseline ? peak - baseline : 0;
  std::printf("%llu %llu %llu %llu\n", static_cast<unsigned long long>(result.time_ns),
              static_cast<unsigned long long>(result.peak_rss_bytes),
              static_cast<unsigned long long>(result.peak_live_bytes),
              static_cast<unsigned long long>(result.failures));
  return 0;
}

}  // namespace strata_replay
