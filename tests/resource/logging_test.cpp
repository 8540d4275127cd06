// The logging adaptor writes the trace format exactly: header, then one record
// per call with op, size, alignment, thread and address, read back here.
#include <strata/logging.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

namespace {

struct trace_file {
  strata::trace::file_header header{};
  std::vector<strata::trace::record> records;
};

// Read a whole trace back from `in`, from its start.
trace_file read_back(std::FILE* in) {
  trace_file out;
  std::rewind(in);
  EXPECT_EQ(std::fread(&out.header, sizeof out.header, 1, in), 1u);
  strata::trace::record r;
  while (std::fread(&r, sizeof r, 1, in) == 1) out.records.push_back(r);
  return out;
}

TEST(Logging, RecordsReadBackExactly) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  void *a, *b, *z;
  std::uint32_t other_thread = 0;
  {
    strata::logging<strata::malloc_resource> log({}, file, 2);  // tiny buffer: several writes
    a = log.allocate(100);
    b = log.allocate(4096, 4096);
    z = log.allocate(0);
    std::thread([&] {
      log.deallocate(a, 100);
      other_thread = strata::thread_number();
    }).join();
    log.deallocate(b, 4096, 4096);
    log.deallocate(z, 0);
    EXPECT_EQ(log.records(), 6u);
    EXPECT_TRUE(log.good());
  }
  const trace_file t = read_back(file);
  std::fclose(file);
  EXPECT_EQ(std::memcmp(t.header.magic, strata::trace::magic, 8), 0);
  EXPECT_EQ(t.header.version, strata::trace::version);
  EXPECT_EQ(t.header.flags, 0u);
  ASSERT_EQ(t.records.size(), 6u);
  using strata::trace::op;
  const auto address = [](void* p) { return reinterpret_cast<std::uint64_t>(p); };
  const std::uint32_t me = strata::thread_number();
  struct expected {
    op kind;
    std::uint64_t address, size;
    std::uint8_t log2;
    std::uint32_t thread;
  };
  const expected want[] = {
      {op::malloc, address(a), 100, 0, me}, {op::aligned, address(b), 4096, 12, me},
      {op::malloc, address(z), 0, 0, me},   {op::free, address(a), 100, 0, other_thread},
      {op::free, address(b), 4096, 0, me},  {op::free, address(z), 0, 0, me}};
  for (std::size_t i = 0; i < 6; ++i) {
    const auto& r = t.records[i];
    EXPECT_EQ(r.kind, want[i].kind) << i;
    EXPECT_EQ(r.address, want[i].address) << i;
    EXPECT_EQ(r.size, want[i].size) << i;
    EXPECT_EQ(r.alignment_log2, want[i].log2) << i;
    EXPECT_EQ(r.thread, want[i].thread) << i;
    EXPECT_EQ(r.old_address, 0u) << i;
    EXPECT_EQ(r.reserved, 0u) << i;
    if (i > 0) {
      EXPECT_GE(r.time_ns, t.records[i - 1].time_ns) << i;
    }
  }
  EXPECT_NE(other_thread, me);
}

TEST(Logging, FailedCallsAreLoggedWithAddressZero) {
  std::FILE* file = std::tmpfile();
  {
    strata::logging<strata::malloc_resource> log({}, file);
    EXPECT_THROW(log.allocate(SIZE_MAX), std::bad_alloc);
    EXPECT_THROW(log.allocate(8, 3), std::invalid_argument);
  }
  const trace_file t = read_back(file);
  std::fclose(file);
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.records[0].address, 0u);
  EXPECT_EQ(t.records[0].size, SIZE_MAX);
}

TEST(Logging, WritesToAPath) {
  const auto path = std::filesystem::temp_directory_path() / "strata_logging_test.trace";
  {
    strata::logging<strata::heap_resource> log({}, path.string());
    log.deallocate(log.allocate(64), 64);
  }
  EXPECT_EQ(std::filesystem::file_size(path),
            sizeof(strata::trace::file_header) + 2 * sizeof(strata::trace::record));
  std::filesystem::remove(path);
  EXPECT_THROW(strata::logging<strata::heap_resource>({}, "/nonexistent-dir/x.trace"),
               std::system_error);
}

}  // namespace
