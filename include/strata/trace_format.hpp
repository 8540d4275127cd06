// The allocation trace format: what STRATA_TRACE records from the malloc
// override and what the logging adaptor writes, and what strata-replay reads.
//
// A file is a header followed by fixed-size records, little-endian:
//   header: magic "STRTRC01", then format version and flags (32-bit each);
//   record: one allocator call (below), in the order its thread made it.
// Records of different threads interleave in the order their buffers were
// written; `time_ns` (monotonic, from the start of the trace) orders them.
#ifndef STRATA_TRACE_FORMAT_HPP
#define STRATA_TRACE_FORMAT_HPP

#include <cstdint>

namespace strata::trace {

inline constexpr char magic[8] = {'S', 'T', 'R', 'T', 'R', 'C', '0', '1'};
inline constexpr std::uint32_t version = 1;

struct file_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t flags;  // 0; reserved
};

// What a record is.
enum class op : std::uint8_t {
  malloc = 1,   // address = the block, size = bytes asked for
  free = 2,     // address = the block freed (size 0 when the caller did not say)
  realloc = 3,  // old_address -> address, size = new size (address 0: it failed)
  aligned = 4,  // aligned_alloc / memalign / posix_memalign / aligned new: as malloc
  calloc = 5,   // as malloc, size = count * size
};

struct record {
  std::uint64_t time_ns;      // since the trace started
  std::uint64_t address;      // the block handed out or freed (0: the call failed)
  std::uint64_t size;         // bytes asked for
  std::uint64_t old_address;  // realloc only: the block resized
  std::uint32_t thread;       // small id, 1, 2, ... in order of each thread's first call
  op kind;
  std::uint8_t alignment_log2;  // aligned: log2 of the alignment; else 0
  std::uint16_t reserved;       // 0
};

static_assert(sizeof(file_header) == 16);
static_assert(sizeof(record) == 40);

}  // namespace strata::trace

#endif  // STRATA_TRACE_FORMAT_HPP
