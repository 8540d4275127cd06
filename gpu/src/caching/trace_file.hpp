// strata GPU caching allocator, private: the device trace file
// (STRATA_GPU_TRACE), every traced action appended as a device_record.
#ifndef STRATA_GPU_SRC_CACHING_TRACE_FILE_HPP
#define STRATA_GPU_SRC_CACHING_TRACE_FILE_HPP

#include <strata/gpu/caching/snapshot.hpp>
#include <strata/trace_format.hpp>

#include <cstdio>
#include <string>

namespace strata::gpu::caching {

class trace_file {
 public:
  // Opens `pattern` ("%p": the process id, "%d": `device`) and writes the
  // header; on failure prints one line on stderr and writes nothing later.
  trace_file(const std::string& pattern, int device);
  ~trace_file();
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;

  // Append one action (buffered; written out when the buffer fills and at close).
  void write(const trace_entry& entry);

 private:
  std::FILE* file_ = nullptr;
  std::uint32_t device_;
};

// The device_record of one traced action: alloc and oom carry the bytes asked for.
trace::device_record to_record(const trace_entry& entry, int device);

}  // namespace strata::gpu::caching

#endif
