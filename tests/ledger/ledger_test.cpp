// The memory ledger: resources join and leave it, its totals are the sum of its
// roots, each row's parent is the resource it takes memory from, and its
// figures match the resources' own.
#include <strata/arena.hpp>
#include <strata/bfc.hpp>
#include <strata/buddy.hpp>
#include <strata/ledger.hpp>
#include <strata/pool.hpp>
#include <strata/statistics.hpp>

#include <gtest/gtest.h>

#include <optional>

namespace {

// The row whose tag is `tag`; the test fails when there is none.
const strata::ledger_row& row_tagged(const strata::memory_ledger& ledger, const std::string& tag) {
  for (const strata::ledger_row& row : ledger.rows())
    if (row.tag == tag) return row;
  ADD_FAILURE() << "no row tagged " << tag;
  return ledger.rows().front();
}

// The sum of the roots' held bytes in `domain`, from the rows themselves.
std::size_t sum_of_roots(const strata::memory_ledger& ledger, strata::ledger_domain domain) {
  std::size_t sum = 0;
  for (const strata::ledger_row& row : ledger.rows())
    if (row.parent == SIZE_MAX && row.domain == domain) sum += row.figures.held;
  return sum;
}

TEST(Ledger, ResourcesJoinWhenMadeAndLeaveWhenDestroyed) {
  const std::size_t before = strata::memory_ledger::live_entries();
  {
    strata::bfc<> blocks;
    strata::buddy<> buddy;
    std::optional<strata::fixed_pool<>> pool{std::in_place, 64};
    EXPECT_EQ(strata::memory_ledger::live_entries(), before + 3);
    pool.reset();
    EXPECT_EQ(strata::memory_ledger::live_entries(), before + 2);
    EXPECT_EQ(strata::memory_ledger::take().rows().size(), before + 2);
  }
  EXPECT_EQ(strata::memory_ledger::live_entries(), before);
}

TEST(Ledger, HeldFollowsWhatEachResourceTookFromItsUpstream) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("blocks");
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "blocks").figures.held, 0u);
  void* p = blocks.allocate(100000);
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "blocks").figures.held,
            blocks.statistics().bytes_reserved);
  EXPECT_GT(blocks.ledger().held(), 0u);
  blocks.deallocate(p, 100000);
  blocks.trim(0);
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "blocks").figures.held, 0u);

  strata::monotonic_arena<> arena;
  arena.ledger().set_tag("arena");
  (void)arena.allocate(5000);
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "arena").figures.held,
            arena.bytes_reserved());
  arena.release();
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "arena").figures.held, 0u);

  strata::fixed_pool<> pool(48);
  pool.ledger().set_tag("pool");
  void* block = pool.allocate();
  EXPECT_EQ(row_tagged(strata::memory_ledger::take(), "pool").figures.held, pool.chunk_bytes());
  pool.deallocate(block);
}

TEST(Ledger, ARowsParentIsTheResourceItTakesMemoryFrom) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("parent");
  strata::monotonic_arena<strata::upstream_ref<strata::bfc<>>> arena{
      strata::arena_options{}, strata::upstream_ref<strata::bfc<>>(blocks)};
  arena.ledger().set_tag("child");
  (void)arena.allocate(3000);
  strata::memory_ledger ledger = strata::memory_ledger::take();
  const strata::ledger_row& child = row_tagged(ledger, "child");
  ASSERT_NE(child.parent, SIZE_MAX);
  EXPECT_EQ(ledger.rows()[child.parent].tag, "parent");
  EXPECT_EQ(row_tagged(ledger, "parent").parent, SIZE_MAX);
  EXPECT_LE(child.figures.held, row_tagged(ledger, "parent").figures.held);
}

TEST(Ledger, AResourceOverAnAdaptorIsTheChildOfWhatTheAdaptorWraps) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag("wrapped");
  strata::statistics<strata::upstream_ref<strata::bfc<>>> counted{
      strata::upstream_ref<strata::bfc<>>(blocks)};
  using counted_ref = strata::upstream_ref<decltype(counted)>;
  strata::monotonic_arena<counted_ref> arena{strata::arena_options{}, counted_ref(counted)};
  arena.ledger().set_tag("over the adaptor");
  (void)arena.allocate(3000);
  strata::memory_ledger ledger = strata::memory_ledger::take();
  const strata::ledger_row& child = row_tagged(ledger, "over the adaptor");
  ASSERT_NE(child.parent, SIZE_MAX) << "counted as a second root";
  EXPECT_EQ(ledger.rows()[child.parent].tag, "wrapped");
  EXPECT_EQ(ledger.total_held(strata::ledger_domain::host),
            sum_of_roots(ledger, strata::ledger_domain::host));
}

TEST(Ledger, TotalsAreTheSumOfTheRoots) {
  strata::bfc<> a;
  strata::buddy<> b;
  strata::fixed_pool<> c(256);
  strata::monotonic_arena<strata::upstream_ref<strata::bfc<>>> nested{
      strata::arena_options{}, strata::upstream_ref<strata::bfc<>>(a)};
  void* pa = a.allocate(1 << 20);
  void* pc = c.allocate();
  (void)nested.allocate(70000);
  strata::memory_ledger ledger = strata::memory_ledger::take();
  for (std::size_t d = 0; d < strata::ledger_domains; ++d) {
    auto domain = static_cast<strata::ledger_domain>(d);
    EXPECT_EQ(ledger.total_held(domain), sum_of_roots(ledger, domain));
  }
  EXPECT_GE(ledger.total_held(strata::ledger_domain::host),
            a.statistics().bytes_reserved + b.config().total_bytes + c.chunk_bytes());
  strata_ledger_totals_t totals;
  ASSERT_EQ(strata_ledger_totals(&totals), 0);
  EXPECT_EQ(totals.host_held, ledger.total_held(strata::ledger_domain::host));
  EXPECT_EQ(totals.resources, ledger.rows().size());
  a.deallocate(pa, 1 << 20);
  c.deallocate(pc);
}

TEST(Ledger, TagsAreCutToTheirRoom) {
  strata::bfc<> blocks;
  blocks.ledger().set_tag(std::string(100, 'x'));
  bool found = false;
  strata::memory_ledger ledger = strata::memory_ledger::take();
  for (const strata::ledger_row& row : ledger.rows())
    found = found || row.tag == std::string(47, 'x');
  EXPECT_TRUE(found);
}

TEST(Ledger, AResourceMayLeaveEarlyAndOnlyOnce) {
  const std::size_t before = strata::memory_ledger::live_entries();
  strata::bfc<> blocks;
  blocks.ledger().leave();
  blocks.ledger().leave();
  EXPECT_EQ(strata::memory_ledger::live_entries(), before);
}

}  // namespace
