// The caching allocator's trace ring, snapshot, JSON and HTML page.
#include "caching_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace strata::gpu::testing {
namespace {

using caching_snapshot = caching_test;

TEST_F(caching_snapshot, TraceKeepsTheActionsInOrder) {
  void* p = cache->allocate(4 * kib, streams[0]);
  cache->deallocate(p, 4 * kib, streams[0]);
  cache->empty_cache();
  const std::vector<trace_entry> trace = cache->trace();
  ASSERT_EQ(trace.size(), 5u);
  EXPECT_EQ(trace[0].action, trace_action::segment_alloc);
  EXPECT_EQ(trace[0].size, 2 * mib);
  EXPECT_EQ(trace[1].action, trace_action::alloc);
  EXPECT_EQ(trace[1].address, reinterpret_cast<std::uintptr_t>(p));
  EXPECT_EQ(trace[1].on, streams[0]);
  EXPECT_EQ(trace[2].action, trace_action::free_requested);
  EXPECT_EQ(trace[3].action, trace_action::free_completed);
  EXPECT_EQ(trace[4].action, trace_action::segment_free);
  for (std::size_t i = 0; i < trace.size(); ++i) EXPECT_EQ(trace[i].sequence, i);
}

TEST_F(caching_snapshot, TraceRingIsBounded) {
  caching_config config;
  config.trace_capacity = 8;
  make(config);
  for (int i = 0; i < 10; ++i) cache->deallocate(cache->allocate(kib, streams[0]), kib, streams[0]);
  const std::vector<trace_entry> trace = cache->trace();
  ASSERT_EQ(trace.size(), 8u);
  // 1 segment_alloc + 3 actions per round = 31 entries; the last 8 stay.
  EXPECT_EQ(trace.front().sequence, 23u);
  EXPECT_EQ(trace.back().sequence, 30u);
  for (std::size_t i = 1; i < trace.size(); ++i)
    EXPECT_EQ(trace[i].sequence, trace[i - 1].sequence + 1);

  config.trace_capacity = 0;
  make(config);
  cache->allocate(kib, streams[0]);
  EXPECT_TRUE(cache->trace().empty());
}

TEST_F(caching_snapshot, SnapshotDescribesSegmentsAndBlocks) {
  void* a = cache->allocate(100 * kib, streams[1]);
  void* b = cache->allocate(3 * mib, streams[2]);
  const memory_snapshot shot = cache->snapshot();
  ASSERT_EQ(shot.segments.size(), 2u);
  for (const segment_info& segment : shot.segments) {
    const block_info& first = segment.blocks.front();
    EXPECT_EQ(first.offset, 0u);
    EXPECT_EQ(first.address, segment.address);
    EXPECT_EQ(first.state, block_state::active_allocated);
    EXPECT_EQ(segment.blocks.back().state, block_state::inactive);
    if (segment.small) {
      EXPECT_EQ(first.address, reinterpret_cast<std::uintptr_t>(a));
      EXPECT_EQ(first.requested, 100 * kib);
      EXPECT_EQ(segment.on, streams[1]);
    } else {
      EXPECT_EQ(first.address, reinterpret_cast<std::uintptr_t>(b));
      EXPECT_EQ(segment.size, 20 * mib);
      EXPECT_EQ(segment.on, streams[2]);
    }
  }
  EXPECT_EQ(shot.device_total, capacity);
  EXPECT_EQ(shot.device_free, capacity - 22 * mib);
  expect_consistent();
}

TEST_F(caching_snapshot, JsonUsesPyTorchKeys) {
  void* p = cache->allocate(kib, streams[0]);
  const std::string json = to_json(cache->snapshot());
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  for (const char* key :
       {"\"segments\":[", "\"total_size\":2097152", "\"segment_type\":\"small\"", "\"blocks\":[",
        "\"state\":\"active_allocated\"", "\"state\":\"inactive\"", "\"requested_size\":1024",
        "\"device_traces\":[[", "\"action\":\"segment_alloc\"", "\"action\":\"alloc\"",
        "\"stats\":{", "\"reserved_bytes\":{\"current\":2097152"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  EXPECT_NE(json.find("\"address\":" + std::to_string(reinterpret_cast<std::uintptr_t>(p))),
            std::string::npos);
  // Brackets balance: the writer never leaves one open.
  int depth = 0;
  for (char c : json) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    EXPECT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
}

TEST_F(caching_snapshot, HtmlPageIsSelfContained) {
  cache->allocate(kib, streams[0]);
  const memory_snapshot shot = cache->snapshot();
  const std::string html = to_html(shot);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find(to_json(shot)), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

}  // namespace
}  // namespace strata::gpu::testing
