// Reading a trace file (trace_format.hpp) whole, with every record checked: a
// trace that is truncated or corrupt is refused with the byte offset where it
// goes wrong, so a replay never runs on half a file without saying so.
#ifndef STRATA_TRACE_READER_HPP
#define STRATA_TRACE_READER_HPP

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "strata/trace_format.hpp"

namespace strata::trace {

// Whether `kind` is one of the ops the format defines.
inline bool known_op(op kind) noexcept {
  auto v = static_cast<std::uint8_t>(kind);
  return v >= static_cast<std::uint8_t>(op::malloc) && v <= static_cast<std::uint8_t>(op::calloc);
}

// Whether `kind` is one of the device ops the format defines.
inline bool known_op(device_op kind) noexcept {
  auto v = static_cast<std::uint8_t>(kind);
  return v >= static_cast<std::uint8_t>(device_op::alloc) &&
         v <= static_cast<std::uint8_t>(device_op::segment_unmap);
}

// What is wrong with one host record, or nothing; `offset` is where it starts.
inline std::string check_record(const record& r, std::size_t i, std::size_t offset) {
  auto at = [](std::size_t o) { return " at byte offset " + std::to_string(o); };
  if (!known_op(r.kind))
    return "record " + std::to_string(i) + ": unknown op " +
           std::to_string(static_cast<unsigned>(r.kind)) + at(offset + offsetof(record, kind));
  if (r.alignment_log2 > 63)
    return "record " + std::to_string(i) + ": alignment 2^" +
           std::to_string(static_cast<unsigned>(r.alignment_log2)) +
           at(offset + offsetof(record, alignment_log2));
  return {};
}

// What is wrong with one device record, or nothing.
inline std::string check_record(const device_record& r, std::size_t i, std::size_t offset) {
  if (known_op(r.kind)) return {};
  return "record " + std::to_string(i) + ": unknown device op " +
         std::to_string(static_cast<unsigned>(r.kind)) + " at byte offset " +
         std::to_string(offset + offsetof(device_record, kind));
}

// Checks `bytes` (a whole file) and appends its records to `out`; false with
// `error` naming the byte offset of the first problem. A host trace read as a
// device trace, or the reverse, is refused by its header's flags.
template <class Record>
bool parse_records(const unsigned char* bytes, std::size_t length, std::vector<Record>& out,
                   std::string& error) {
  auto at = [](std::size_t offset) { return " at byte offset " + std::to_string(offset); };
  if (bytes == nullptr && length != 0) {
    error = "null buffer of " + std::to_string(length) + " bytes";
    return false;
  }
  if (length < sizeof(file_header)) {
    error = "truncated header (" + std::to_string(length) + " of " +
            std::to_string(sizeof(file_header)) + " bytes)" + at(length);
    return false;
  }
  file_header header;
  std::memcpy(&header, bytes, sizeof header);
  if (std::memcmp(header.magic, magic, sizeof magic) != 0) {
    error = "bad magic (not a strata trace)" + at(0);
    return false;
  }
  if (header.version != version) {
    error = "unsupported version " + std::to_string(header.version) +
            at(offsetof(file_header, version));
    return false;
  }
  constexpr bool device = std::is_same_v<Record, device_record>;
  if (header.flags != (device ? flag_device : 0u)) {
    error = header.flags == flag_device
                ? "a device trace (replay it with strata-replay --gpu)" +
                      at(offsetof(file_header, flags))
                : (header.flags == 0 ? "a host trace, not a device trace"
                                     : "unknown flags " + std::to_string(header.flags)) +
                      at(offsetof(file_header, flags));
    return false;
  }
  std::size_t body = length - sizeof header;
  std::size_t count = body / sizeof(Record);
  out.reserve(out.size() + count);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t offset = sizeof header + i * sizeof(Record);
    Record r;
    std::memcpy(&r, bytes + offset, sizeof r);
    error = check_record(r, i, offset);
    if (!error.empty()) return false;
    out.push_back(r);
  }
  if (body % sizeof(Record) != 0) {
    std::size_t offset = sizeof header + count * sizeof(Record);
    error = "truncated record " + std::to_string(count) + " (" +
            std::to_string(body % sizeof(Record)) + " of " + std::to_string(sizeof(Record)) +
            " bytes)" + at(offset);
    return false;
  }
  return true;
}

// A host trace: parse_records over host records.
inline bool parse(const unsigned char* bytes, std::size_t length, std::vector<record>& out,
                  std::string& error) {
  return parse_records(bytes, length, out, error);
}

// Reads the file at `path` and parses it (host or device records); false
// with `error` set on failure.
template <class Record>
bool read_file(const char* path, std::vector<Record>& out, std::string& error) {
  if (path == nullptr) {
    error = "null path";
    return false;
  }
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    error = "read error";
    return false;
  }
  return parse_records(bytes.data(), bytes.size(), out, error);
}

}  // namespace strata::trace

#endif  // STRATA_TRACE_READER_HPP
