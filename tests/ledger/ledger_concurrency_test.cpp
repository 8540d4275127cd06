// Resources join and leave the ledger on several threads while others take
// snapshots and allocate: every snapshot is consistent and the count returns.
#include <strata/bfc.hpp>
#include <strata/ledger.hpp>
#include <strata/pool.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

TEST(LedgerConcurrency, ThreadsJoinLeaveAndSnapshotAtOnce) {
  const std::size_t before = strata::memory_ledger::live_entries();
  std::atomic<bool> stop{false};
  std::vector<std::thread> makers;
  for (int t = 0; t < 3; ++t)
    makers.emplace_back([t] {
      for (int i = 0; i < 300; ++i) {
        strata::bfc<> blocks;
        blocks.ledger().set_tag("thread " + std::to_string(t));
        strata::fixed_pool<> pool(32);
        void* p = blocks.allocate(static_cast<std::size_t>(64 + i));
        void* q = pool.allocate();
        pool.deallocate(q);
        blocks.deallocate(p, static_cast<std::size_t>(64 + i));
      }
    });
  std::thread reader([&stop] {
    while (!stop.load()) {
      strata::memory_ledger ledger = strata::memory_ledger::take();
      std::size_t roots = 0;
      for (const strata::ledger_row& row : ledger.rows())
        if (row.parent == SIZE_MAX) roots += row.figures.held;
      EXPECT_EQ(roots, ledger.total_held(strata::ledger_domain::host));
      (void)ledger.json();
    }
  });
  for (std::thread& maker : makers) maker.join();
  stop = true;
  reader.join();
  EXPECT_EQ(strata::memory_ledger::live_entries(), before);
}

}  // namespace
