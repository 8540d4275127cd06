// operator new throws std::bad_alloc when the address space runs out, as the
// standard says: the C++ runtime that throws it must have been looked up
// before, since at that moment no memory is left to look it up with.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

// The address space in use now, from /proc/self/statm (pages).
std::size_t address_space_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) std::abort();
  std::fclose(statm);
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Say `text` without allocating: no memory is left when it is said.
void say(const char* text, std::size_t length) {
  if (write(STDOUT_FILENO, text, length) < 0) std::abort();
}

// Map what is left of the address space, largest pieces first, so that the
// first operator new to fail finds none for anything else either.
void fill_address_space() {
  for (std::size_t piece = std::size_t{1} << 30; piece >= 4096; piece /= 2)
    while (mmap(nullptr, piece, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) !=
           MAP_FAILED) {
    }
  // And the heap's free blocks of every small size (never freed: the test ends).
  for (std::size_t size = 8; size <= 4096; size += 8)
    while (std::malloc(size) != nullptr) {
    }
}

}  // namespace

int main() {
  std::vector<char*> blocks;
  blocks.reserve(4096);
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = address_space_bytes() + (std::size_t{512} << 20);
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 77;
  fill_address_space();
  try {
    while (blocks.size() < blocks.capacity()) blocks.push_back(new char[std::size_t{1} << 20]);
    say("the address space never ran out\n", 32);
    return 1;
  } catch (const std::bad_alloc&) {
    static const char line[] = "std::bad_alloc caught when the address space ran out\n";
    say(line, sizeof line - 1);
  }
  for (char* block : blocks) delete[] block;
  return 0;
}
