#include "trace_file.hpp"

#include <unistd.h>

#include <cstring>

namespace strata::gpu::caching {

namespace {

// The path with "%p" and "%d" expanded, so processes and devices get files of their own.
std::string expand(const std::string& pattern, int device) {
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      path += std::to_string(::getpid());
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'd') {
      path += std::to_string(device);
      ++i;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

}  // namespace

// The file's code for an action (trace_format.hpp keeps codes once written).
trace::device_op device_op_of(trace_action action) {
  switch (action) {
    case trace_action::alloc:
      return trace::device_op::alloc;
    case trace_action::free_requested:
      return trace::device_op::free_requested;
    case trace_action::free_completed:
      return trace::device_op::free_completed;
    case trace_action::segment_alloc:
      return trace::device_op::segment_alloc;
    case trace_action::segment_free:
      return trace::device_op::segment_free;
    case trace_action::segment_map:
      return trace::device_op::segment_map;
    case trace_action::segment_unmap:
      return trace::device_op::segment_unmap;
    case trace_action::oom:
      break;
  }
  return trace::device_op::oom;
}

// The action as the file keeps it; the stream is its handle's value.
trace::device_record to_record(const trace_entry& entry, int device) {
  trace::device_record r{};
  r.sequence = entry.sequence;
  r.address = entry.address;
  const bool asked = entry.action == trace_action::alloc || entry.action == trace_action::oom;
  r.size = asked ? entry.requested : entry.size;
  r.stream = reinterpret_cast<std::uintptr_t>(entry.on.handle);
  r.device = static_cast<std::uint32_t>(device);
  r.kind = device_op_of(entry.action);
  return r;
}

// A large stdio buffer keeps the per-action cost to a copy.
trace_file::trace_file(const std::string& pattern, int device)
    : device_(static_cast<std::uint32_t>(device)) {
  const std::string path = expand(pattern, device);
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    std::fprintf(stderr, "strata: STRATA_GPU_TRACE: cannot open %s: %s; not tracing\n",
                 path.c_str(), std::strerror(errno));
    return;
  }
  std::setvbuf(file_, nullptr, _IOFBF, std::size_t{1} << 16);
  trace::file_header header{};
  std::memcpy(header.magic, trace::magic, sizeof header.magic);
  header.version = trace::version;
  header.flags = trace::flag_device;
  std::fwrite(&header, sizeof header, 1, file_);
}

// Close writes what is buffered.
trace_file::~trace_file() {
  if (file_ != nullptr) std::fclose(file_);
}

// Buffered by stdio.
void trace_file::write(const trace_entry& entry) {
  if (file_ == nullptr) return;
  const trace::device_record r = to_record(entry, static_cast<int>(device_));
  std::fwrite(&r, sizeof r, 1, file_);
}

}  // namespace strata::gpu::caching
