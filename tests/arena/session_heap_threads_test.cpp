// Session heap blocks freed by other threads, and sessions on many threads.
#include <strata/session_heap.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace {

TEST(SessionHeapThreads, OverflowBlocksMayBeFreedByAnyThread) {
  strata::session_heap session(4096);
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) {
    void* p = session.allocate(200);
    std::memset(p, 1, 200);
    blocks.push_back(p);
  }
  std::thread([&] {
    for (void* p : blocks) session.deallocate(p, 200);
  }).join();
  for (int i = 0; i < 5000; ++i) std::memset(session.allocate(200), 2, 200);
  session.destroy();
}

TEST(SessionHeapThreads, OneSessionPerThread) {
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([t] {
      for (int round = 0; round < 20; ++round) {
        strata::session_heap session(32 * 1024);
        std::vector<unsigned char*> blocks;
        for (int i = 0; i < 500; ++i) {
          auto* p = static_cast<unsigned char*>(session.allocate(256));
          std::memset(p, t, 256);
          blocks.push_back(p);
        }
        for (auto* p : blocks) ASSERT_EQ(p[255], t);
      }
    });
  for (auto& w : workers) w.join();
}

}  // namespace
