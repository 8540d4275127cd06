// The allocation trace format: what STRATA_TRACE records from the malloc
// override and what the logging adaptor writes, and what strata-replay reads.
//
// A file is a header followed by fixed-size records, little-endian:
//   header: magic "STRTRC01", then format version and flags (32-bit each);
//   record: one allocator call (below), in the order its thread made it.
// Records of different threads interleave in the order their buffers were
// written; `time_ns` (monotonic, from the start of the trace) orders them.
//
// A device trace (the GPU caching allocator's, STRATA_GPU_TRACE; or a
// PyTorch memory snapshot converted by strata-replay's converter) has the same
// header with `flags` = flag_device, then device_records of the same 40 bytes:
// the host record with its stream and device in place of old_address and thread.
#ifndef STRATA_TRACE_FORMAT_HPP
#define STRATA_TRACE_FORMAT_HPP

#include <cstdint>

namespace strata::trace {

inline constexpr char magic[8] = {'S', 'T', 'R', 'T', 'R', 'C', '0', '1'};
inline constexpr std::uint32_t version = 1;

struct file_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t flags;  // 0 for a host trace, flag_device for a device trace
};

inline constexpr std::uint32_t flag_device = 1;

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

// What a device record is: the caching allocator's traced actions (PyTorch's names).
enum class device_op : std::uint8_t {
  alloc = 16,           // address = the block, size = bytes asked for
  free_requested = 17,  // address = the block the caller freed, size = its bytes
  free_completed = 18,  // the block is back in the cache (after events on other streams)
  segment_alloc = 19,   // address = a segment taken from the device (cudaMalloc), size = its bytes
  segment_free = 20,    // address = a segment given back to the device, size = its bytes
  oom = 21,             // an allocation of `size` bytes that failed; address 0
  segment_map = 22,     // an expandable segment grew: `size` bytes mapped at `address`
  segment_unmap = 23,   // an expandable segment shrank: `size` bytes unmapped at `address`
};

struct device_record {
  std::uint64_t sequence;  // the action's place among the device's actions, from 0
  std::uint64_t address;
  std::uint64_t size;
  std::uint64_t stream;  // the stream's handle (0: the legacy default stream, 2: per-thread)
  std::uint32_t device;  // the device's ordinal
  device_op kind;
  std::uint8_t reserved8;    // 0
  std::uint16_t reserved16;  // 0
};

static_assert(sizeof(file_header) == 16);
static_assert(sizeof(record) == 40);
static_assert(sizeof(device_record) == 40);

}  // namespace strata::trace

#endif  // STRATA_TRACE_FORMAT_HPP
