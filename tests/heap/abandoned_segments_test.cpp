// Segments of exited threads while other threads free into them, adopt them and
// force collections, and the purge thread (1 ms delay) collects and purges them:
// no live block may lose a byte, and at the end every page is back.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/strata.h"

namespace {

// A block with its size and the byte it was filled with.
struct parcel {
  void* p;
  std::size_t size;
  std::uint8_t tag;
};

// Check a block's bytes, then free it.
void check_and_free(const parcel& item) {
  auto* bytes = static_cast<std::uint8_t*>(item.p);
  for (std::size_t i = 0; i < item.size; i += 61) ASSERT_EQ(bytes[i], item.tag);
  ASSERT_EQ(bytes[item.size - 1], item.tag);
  strata_free(item.p);
}

// Blocks of a thread that exits once it has filled them.
std::vector<parcel> blocks_of_an_exited_thread(int seed) {
  std::vector<parcel> blocks;
  std::thread([&blocks, seed] {
    for (int i = 0; i < 3000; ++i) {
      // Mostly list pages, some map pages, now and then a block purged when freed remotely.
      std::size_t size = i % 500 == 0 ? (std::size_t{3} << 20) : 16 + (i * 97 + seed) % 9000;
      auto tag = static_cast<std::uint8_t>(i + seed);
      void* p = strata_malloc(size);
      ASSERT_NE(p, nullptr);
      std::memset(p, tag, size);
      blocks.push_back({p, size, tag});
    }
  }).join();
  return blocks;
}

}  // namespace

TEST(AbandonedSegments, FreedAdoptedAndPurgedConcurrently) {
  long delay = strata_option_get(STRATA_OPTION_PURGE_DELAY_MS);
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, 1);
  strata_collect(1);
  strata_stats_t before;
  strata_stats_get(&before);
  for (int round = 0; round < 6; ++round) {
    std::vector<parcel> orphans = blocks_of_an_exited_thread(round);
    std::vector<parcel> more = blocks_of_an_exited_thread(round + 100);
    orphans.insert(orphans.end(), more.begin(), more.end());
    std::atomic<std::size_t> next{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> workers;
    // Two threads free the orphans, interleaved; a third allocates (adopting the
    // abandoned segments) and a fourth forces collections meanwhile.
    for (int t = 0; t < 2; ++t) {
      workers.emplace_back([&] {
        for (std::size_t i; (i = next.fetch_add(1)) < orphans.size();) check_and_free(orphans[i]);
      });
    }
    workers.emplace_back([&] {
      std::vector<parcel> mine;
      for (int i = 0; !done.load() || i < 200; ++i) {
        std::size_t size = 16 + (i * 131) % 5000;
        auto tag = static_cast<std::uint8_t>(i);
        void* p = strata_malloc(size);
        ASSERT_NE(p, nullptr);
        std::memset(p, tag, size);
        mine.push_back({p, size, tag});
        if (mine.size() == 64) {
          for (const parcel& item : mine) check_and_free(item);
          mine.clear();
        }
      }
      for (const parcel& item : mine) check_and_free(item);
    });
    workers.emplace_back([&] {
      while (!done.load()) {
        strata_collect(1);
        std::this_thread::yield();
      }
    });
    workers[0].join();
    workers[1].join();
    done.store(true);
    workers[2].join();
    workers[3].join();
  }
  strata_option_set(STRATA_OPTION_PURGE_DELAY_MS, delay);
  strata_collect(1);
  strata_stats_t after;
  strata_stats_get(&after);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_LE(after.pages, before.pages);
}
