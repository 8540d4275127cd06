// A program for aligned_override.sh: one aligned block of 64 bytes at 64 from
// the entry point named by argv[1] (posix_memalign, aligned_alloc, memalign,
// new_aligned), checked for its alignment, then written one byte past its end.
// Under the override with every allocation guarded and none placed against the
// guard before it, that write faults and strata reports it.
#include <malloc.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

// The block from the named entry point; null for an unknown name.
char* aligned_block(const char* entry) {
  void* p = nullptr;
  if (std::strcmp(entry, "posix_memalign") == 0 && posix_memalign(&p, 64, 64) != 0) return nullptr;
  if (std::strcmp(entry, "aligned_alloc") == 0) p = aligned_alloc(64, 64);
  if (std::strcmp(entry, "memalign") == 0) p = memalign(64, 64);
  if (std::strcmp(entry, "new_aligned") == 0) p = operator new (64, std::align_val_t{64});
  return static_cast<char*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  volatile char* p = aligned_block(argv[1]);
  if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 64 != 0) {
    std::fprintf(stderr, "%s: no block aligned to 64\n", argv[1]);
    return 2;
  }
  for (int i = 0; i < 64; ++i) p[i] = 1;
  p[64] = 1;  // faults when the block is guarded
  std::fprintf(stderr, "%s: the write past the block did not fault\n", argv[1]);
  return 1;
}
