// The device trace file (STRATA_GPU_TRACE) and the what-if replay over it.
#include <strata/gpu/caching/replay.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/trace_reader.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace strata::gpu::testing {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t gib = std::size_t{1} << 30;

// A trace path of this process's own, removed when the test ends.
class trace_path {
 public:
  trace_path() : path_("/tmp/strata-gpu-trace-" + std::to_string(::getpid()) + ".trace") {}
  ~trace_path() { std::remove(path_.c_str()); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// The records of a device trace file, which must read without error.
std::vector<trace::device_record> read_trace(const std::string& path) {
  std::vector<trace::device_record> records;
  std::string error;
  EXPECT_TRUE(trace::read_file(path.c_str(), records, error)) << error;
  return records;
}

// An address-only device of `capacity`, two streams, and a workload of
// random lifetimes and sizes (small and large) recorded into `path`; returns
// the peak reserved and device allocations the allocator counted.
std::pair<std::size_t, std::uint64_t> record_workload(const std::string& path,
                                                      const std::string& conf,
                                                      std::size_t capacity) {
  simulated_config device_config;
  device_config.capacity = capacity;
  device_config.backing = memory_backing::address_only;
  simulated_device dev(device_config);
  const stream streams[2] = {dev.create_stream(), dev.create_stream()};
  std::pair<std::size_t, std::uint64_t> counted;
  {
    caching_config config = parse_caching_config(conf);
    config.trace_path = path;
    caching_allocator cache(dev, config);
    std::mt19937_64 random(37);
    std::vector<std::pair<void*, stream>> live;
    for (int i = 0; i < 3000; ++i) {
      if (!live.empty() && random() % 100 < 45) {
        const std::size_t victim = random() % live.size();
        cache.deallocate_on(live[victim].first, 0, device_alignment, live[victim].second);
        live[victim] = live.back();
        live.pop_back();
        continue;
      }
      const stream s = streams[random() % 2];
      const std::size_t bytes =
          random() % 4 == 0 ? 1 + random() % (64 * mib) : 1 + random() % (2 * mib);
      live.emplace_back(cache.allocate_on(bytes, device_alignment, s), s);
    }
    const caching_stats stats = cache.stats();
    counted = {static_cast<std::size_t>(stats.all.reserved_bytes.peak), stats.num_device_allocs};
    for (const auto& [p, s] : live) cache.deallocate_on(p, 0, device_alignment, s);
  }
  for (const stream s : streams) dev.destroy_stream(s);
  return counted;
}

TEST(caching_trace_file, RecordsEveryActionWithStreamAndDevice) {
  const trace_path path;
  simulated_device dev;
  const stream s = dev.create_stream();
  {
    caching_config config;
    config.trace_capacity = 2;  // the file keeps what the ring drops
    config.trace_path = path.str();
    caching_allocator cache(dev, config);
    void* p = cache.allocate_on(1000, device_alignment, s);
    cache.deallocate_on(p, 1000, device_alignment, s);
    cache.empty_cache();
  }
  dev.destroy_stream(s);
  const std::vector<trace::device_record> records = read_trace(path.str());
  ASSERT_EQ(records.size(), 5u);
  const trace::device_op kinds[] = {
      trace::device_op::segment_alloc, trace::device_op::alloc, trace::device_op::free_requested,
      trace::device_op::free_completed, trace::device_op::segment_free};
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].kind, kinds[i]);
    EXPECT_EQ(records[i].sequence, i);
    EXPECT_EQ(records[i].stream, reinterpret_cast<std::uintptr_t>(s.handle));
    EXPECT_EQ(records[i].device, 0u);
  }
  EXPECT_EQ(records[0].size, 2 * mib);  // the segment
  EXPECT_EQ(records[1].size, 1000u);    // the bytes asked for, not the block's 1024
  EXPECT_EQ(records[2].size, 1024u);
  EXPECT_EQ(records[1].address, records[2].address);
  // A host reader refuses it, naming what it is.
  std::vector<trace::record> host;
  std::string error;
  EXPECT_FALSE(trace::read_file(path.str().c_str(), host, error));
  EXPECT_NE(error.find("a device trace"), std::string::npos) << error;
}

TEST(caching_trace_file, UnopenablePathPrintsOneLineAndTracesNothing) {
  simulated_device dev;
  caching_config config;
  config.trace_path = "/nonexistent-dir/x.trace";
  ::testing::internal::CaptureStderr();
  caching_allocator cache(dev, config);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("STRATA_GPU_TRACE: cannot open /nonexistent-dir/x.trace"), std::string::npos)
      << err;
  cache.deallocate(cache.allocate_on(100, device_alignment, stream{}));
  EXPECT_EQ(cache.trace().size(), 4u);  // the ring still records
}

TEST(caching_trace_file, EnvironmentNamesTheFile) {
  ::setenv("STRATA_GPU_TRACE", "/tmp/x.%p.%d.trace", 1);
  EXPECT_EQ(caching_config_from_environment().trace_path, "/tmp/x.%p.%d.trace");
  ::unsetenv("STRATA_GPU_TRACE");
  EXPECT_EQ(caching_config_from_environment().trace_path, "");
}

TEST(caching_replay, RecordedConfigurationReproducesItsPeakReservedExactly) {
  const trace_path path;
  const std::string conf = "max_split_size_mb:32,roundup_power2_divisions:4";
  const auto [peak, device_allocs] = record_workload(path.str(), conf, 8 * gib);
  const std::vector<trace::device_record> records = read_trace(path.str());
  const recorded_summary recorded = summarize(records);
  EXPECT_EQ(recorded.peak_reserved, peak);
  EXPECT_EQ(recorded.device_allocations, device_allocs);
  EXPECT_EQ(recorded.streams, 2u);
  replay_options options;
  options.device_memory = 8 * gib;
  const replay_result replayed = replay(records, parse_caching_config(conf), options);
  EXPECT_FALSE(replayed.out_of_memory);
  EXPECT_EQ(replayed.peak_reserved, peak);
  EXPECT_EQ(replayed.device_allocations, device_allocs);
  EXPECT_EQ(replayed.unmatched_frees, 0u);
  EXPECT_EQ(replayed.replayed, recorded.allocations + recorded.frees);
  EXPECT_GT(replayed.peak_allocated, 0u);
  EXPECT_LE(replayed.peak_allocated, replayed.peak_reserved);
  EXPECT_GE(replayed.fragmentation_at_peak, 0.0);
  EXPECT_LT(replayed.fragmentation_at_peak, 1.0);
  // Another configuration is another allocator: different segments.
  const replay_result plain = replay(records, caching_config{}, options);
  EXPECT_NE(plain.device_allocations, device_allocs);
}

TEST(caching_replay, ReportsTheRecordThatRunsOutAndKeepsATimeline) {
  const trace_path path;
  record_workload(path.str(), "", 8 * gib);
  const std::vector<trace::device_record> records = read_trace(path.str());
  replay_options options;
  options.device_memory = 64 * mib;
  options.timeline_points = 50;
  const replay_result small = replay(records, caching_config{}, options);
  ASSERT_TRUE(small.out_of_memory);
  ASSERT_LT(small.oom_record, records.size());
  EXPECT_EQ(records[small.oom_record].kind, trace::device_op::alloc);
  EXPECT_EQ(small.oom_bytes, records[small.oom_record].size);
  EXPECT_LE(small.peak_reserved, 64 * mib);
  ASSERT_FALSE(small.timeline.empty());
  for (const replay_sample& sample : small.timeline) {
    EXPECT_LT(sample.event, small.oom_record);
    EXPECT_LE(sample.allocated, sample.reserved);
  }
}

TEST(caching_replay, FreesOfBlocksFromBeforeTheTraceAreCounted) {
  std::vector<trace::device_record> records(2);
  records[0].kind = trace::device_op::free_requested;
  records[0].address = 0x1000;
  records[1].kind = trace::device_op::alloc;
  records[1].address = 0x2000;
  records[1].size = 3 * mib;
  const replay_result result = replay(records, caching_config{});
  EXPECT_EQ(result.unmatched_frees, 1u);
  EXPECT_EQ(result.replayed, 1u);
  EXPECT_EQ(result.peak_reserved, 20 * mib);
  EXPECT_EQ(result.device_allocations, 1u);
}

}  // namespace
}  // namespace strata::gpu::testing
