// Multi-threaded heap tests: cross-thread frees, producer/consumer, thread churn.
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "heap_shadow.hpp"

namespace {

// A block handed between threads with its expected contents.
struct parcel {
  void* p;
  std::size_t size;
  std::uint8_t tag;
};

void check_and_free(const parcel& item) {
  auto* bytes = static_cast<std::uint8_t*>(item.p);
  for (std::size_t i = 0; i < item.size; i += 61) ASSERT_EQ(bytes[i], item.tag);
  strata_free(item.p);
}

}  // namespace

TEST(HeapThreads, CrossThreadFreesPreserveBlocks) {
  constexpr int threads = 4;
  constexpr int per_thread = 20000;
  std::vector<std::vector<parcel>> mailbox(threads);
  std::mutex lock;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<parcel> mine;
      for (int i = 0; i < per_thread; ++i) {
        std::size_t size = log_uniform_size(rng, 70000);
        auto tag = static_cast<std::uint8_t>(i + t);
        void* p = strata_malloc(size);
        ASSERT_NE(p, nullptr);
        std::memset(p, tag, size);
        // Half the blocks go to the next thread's mailbox to be freed there.
        if (i % 2 == 0) {
          std::lock_guard<std::mutex> guard(lock);
          mailbox[(t + 1) % threads].push_back({p, size, tag});
        } else {
          mine.push_back({p, size, tag});
        }
        if (i % 64 == 0) {
          std::vector<parcel> inbox;
          {
            std::lock_guard<std::mutex> guard(lock);
            inbox.swap(mailbox[t]);
          }
          for (const parcel& item : inbox) check_and_free(item);
        }
      }
      for (const parcel& item : mine) check_and_free(item);
    });
  }
  for (auto& w : workers) w.join();
  for (auto& box : mailbox)
    for (const parcel& item : box) check_and_free(item);
  strata_stats_t s;
  strata_stats_get(&s);
  EXPECT_GT(s.cross_thread_frees, 0u);
}

TEST(HeapThreads, ProducerConsumer) {
  constexpr int items = 200000;
  std::vector<std::atomic<void*>> ring(1024);
  for (auto& slot : ring) slot.store(nullptr);
  std::thread producer([&] {
    for (int i = 0; i < items; ++i) {
      auto* p = static_cast<int*>(strata_malloc(48 + (i % 5) * 16));
      p[0] = i;
      auto& slot = ring[i % ring.size()];
      while (slot.load(std::memory_order_acquire) != nullptr) std::this_thread::yield();
      slot.store(p, std::memory_order_release);
    }
  });
  std::thread consumer([&] {
    for (int i = 0; i < items; ++i) {
      auto& slot = ring[i % ring.size()];
      void* p;
      while ((p = slot.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
      slot.store(nullptr, std::memory_order_release);
      ASSERT_EQ(static_cast<int*>(p)[0], i);
      strata_free(p);
    }
  });
  producer.join();
  consumer.join();
}

TEST(HeapThreads, BlocksOfExitedThreadsStayValidAndAreReclaimed) {
  std::vector<parcel> orphans;
  for (int round = 0; round < 20; ++round) {
    std::thread([&] {
      for (int i = 0; i < 500; ++i) {
        std::size_t size = 16 + (i * 37) % 3000;
        void* p = strata_malloc(size);
        std::memset(p, i, size);
        orphans.push_back({p, size, static_cast<std::uint8_t>(i)});
      }
    }).join();
  }
  for (const parcel& item : orphans) check_and_free(item);  // freed after their thread exited
  void* p = strata_malloc(100);
  strata_free(p);
}

TEST(HeapThreads, BitmapPagesEmptiedInAnyOrderGoBack) {
  // Blocks of 4 KiB-1 MiB (bitmap pages), freed in a shuffled order, a third of
  // them by another thread while their pages sit full: every page must come back.
  strata_collect(1);
  strata_stats_t before;
  strata_stats_get(&before);
  std::mt19937_64 random(11);
  for (int round = 0; round < 4; ++round) {
    std::vector<parcel> blocks;
    for (int i = 0; i < 600; ++i) {
      std::size_t size = std::size_t{4096} << (random() % 9);
      size += random() % size;
      auto* p = static_cast<std::uint8_t*>(strata_malloc(size));
      ASSERT_NE(p, nullptr);
      auto tag = static_cast<std::uint8_t>(i);
      for (std::size_t j = 0; j < size; j += 61) p[j] = tag;
      blocks.push_back({p, size, tag});
    }
    std::shuffle(blocks.begin(), blocks.end(), random);
    std::vector<parcel> theirs(blocks.begin(), blocks.begin() + 200);
    std::thread([&] {
      for (const parcel& item : theirs) check_and_free(item);
    }).join();
    for (std::size_t i = 200; i < blocks.size(); ++i) check_and_free(blocks[i]);
  }
  strata_collect(0);
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.pages, before.pages);
  EXPECT_EQ(after.in_use, before.in_use);
}

TEST(HeapThreads, HugeBlocksFreedByAnotherThread) {
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(strata_malloc(std::size_t{12} << 20));
  std::thread([&] {
    for (void* p : blocks) strata_free(p);
  }).join();
  strata_collect(1);
  strata_stats_t s;
  strata_stats_get(&s);
  EXPECT_EQ(s.huge_in_use, 0u);
}

// With a 1 ms purge delay the purge thread purges cached segments while
// threads take them back out of the cache: no block it hands out may lose bytes.
TEST(HeapThreads, PurgeThreadRacesSegmentReuse) {
  long delay = strata_option_get(STRATA_OPTION_PURGE_DELAY_MS);
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 1);
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([t] {
      for (int round = 0; round < 12; ++round) {
        // 40 MiB of 1 MiB blocks spans two segments; a 12 MiB block is huge.
        std::vector<parcel> blocks;
        for (int i = 0; i < 40; ++i) {
          std::size_t size = (i % 10 == 9) ? (std::size_t{12} << 20) : (std::size_t{1} << 20);
          auto* p = static_cast<std::uint8_t*>(strata_malloc(size));
          ASSERT_NE(p, nullptr);
          auto tag = static_cast<std::uint8_t>(round * 40 + i + t);
          for (std::size_t j = 0; j < size; j += 61) p[j] = tag;
          blocks.push_back({p, size, tag});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // deadlines pass meanwhile
        for (const parcel& item : blocks) check_and_free(item);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, delay);
  strata_collect(1);
  strata_stats_t s;
  strata_stats_get(&s);
  EXPECT_EQ(s.huge_in_use, 0u);
  EXPECT_GT(s.purged, 0u);
}

// A program that links the heap directly and forks while the purge thread
// works: each child must find the heap's locks free (fork handlers hold them
// across fork). A child that hangs is killed by its alarm and fails the test.
TEST(HeapThreads, ForkWhileThePurgeThreadWorks) {
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 1);
  for (int round = 0; round < 100; ++round) {
    strata_free(strata_malloc(std::size_t{16} << 20));  // cached, then purged by the thread
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(10);
      strata_option_set(STRATA_OPTION_PURGE_THREAD, 0);  // no thread started in the child (TSan)
      void* p = strata_malloc(std::size_t{16} << 20);
      strata_free(p);
      strata_free(strata_malloc(100));
      _exit(p != nullptr ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
  }
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 100);
}
