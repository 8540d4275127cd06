// Frees after main returns: static destructors, atexit handlers, thread_local
// destructors, an ELF destructor, and a detached thread that keeps allocating while the
// process exits. The last destructor to run prints the marker the driver looks for.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

namespace {

// Owns heap memory until the end of the program; checks it on the way out.
struct owner_at_exit {
  std::vector<std::string> lines;
  std::map<int, std::unique_ptr<char[]>> buffers;

  ~owner_at_exit() {
    for (const auto& line : lines) CHECK(line.size() == 40, "string damaged before exit");
    for (auto& [size, buffer] : buffers) CHECK(buffer[size - 1] == 'x', "buffer damaged");
  }
};

owner_at_exit static_owner;
void* atexit_blocks[100];
char* destructor_block;

// Owned by each thread; destroyed (and freed) as the thread exits.
struct per_thread_cache {
  std::vector<std::unique_ptr<int>> items;
  ~per_thread_cache() { items.clear(); }
};
thread_local per_thread_cache thread_cache;

// Fills the per-thread cache of the calling thread.
void fill_thread_cache(int count) {
  for (int i = 0; i < count; ++i) thread_cache.items.push_back(std::make_unique<int>(i));
}

// Registered with atexit: frees blocks main allocated, allocating a little on the way.
void free_at_exit() {
  for (void* block : atexit_blocks) std::free(block);
  std::string temporary(1000, 'y');
  CHECK(temporary.back() == 'y', "allocation inside an atexit handler");
}

std::atomic<bool> exiting{false};

// Keeps allocating until the process is gone.
void allocate_forever() {
  std::vector<std::string> churn;
  for (unsigned i = 0;; ++i) {
    churn.emplace_back(16 + i % 300, 'c');
    if (churn.size() > 1000) churn.clear();
    if (exiting.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
}

}  // namespace

// An ELF destructor that frees, runs last of the program's own destructors and prints
// the marker the driver checks for.
__attribute__((destructor(101))) static void free_in_elf_destructor() {
  std::free(destructor_block);
  static const char marker[] = "all exit-time frees done\n";
  CHECK(write(STDOUT_FILENO, marker, sizeof marker - 1) == static_cast<ssize_t>(sizeof marker - 1),
        "write");
}

int main() {
  for (int i = 0; i < 2000; ++i)
    static_owner.lines.emplace_back(40, static_cast<char>('a' + i % 26));
  for (int size = 1; size < 300000; size = size * 3 + 1) {
    auto buffer = std::make_unique<char[]>(static_cast<std::size_t>(size));
    buffer[size - 1] = 'x';
    static_owner.buffers.emplace(size, std::move(buffer));
  }
  for (std::size_t i = 0; i < 100; ++i) atexit_blocks[i] = std::malloc(i * 1000 + 1);
  CHECK(std::atexit(free_at_exit) == 0, "atexit");
  destructor_block = static_cast<char*>(std::malloc(5000));

  fill_thread_cache(500);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(fill_thread_cache, 1000 + i);
  for (auto& thread : threads) thread.join();
  std::thread(allocate_forever).detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  exiting = true;
  return 0;
}
