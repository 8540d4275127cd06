// The logging adaptor: every call to an upstream, as a compact binary log in
// the trace format of <strata/trace_format.hpp>, which strata-replay replays.
//
// logging<Upstream> writes the 16-byte header when it is made, then one 40-byte
// record per call: time since the log began (steady clock, ns), op (malloc for
// the default alignment or less, aligned with alignment_log2 above it, free),
// size, the block's address (0 when the upstream threw; the exception then
// propagates) and the thread (strata::thread_number(), numbered process-wide).
// Records collect in a buffer of `buffer_records` and go to the FILE* when it
// fills, on flush(), and when the adaptor is destroyed. A mutex orders records
// of threads sharing the adaptor; they are written in the order taken.
#ifndef STRATA_LOGGING_HPP
#define STRATA_LOGGING_HPP

#include <strata/resource.hpp>
#include <strata/thread_number.hpp>
#include <strata/trace_format.hpp>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace strata {

template <host_resource Upstream>
class logging {
 public:
  static constexpr std::size_t default_buffer_records = 4096;

  // Log to an open stream, which the caller closes after the adaptor is gone.
  logging(Upstream upstream, std::FILE* out, std::size_t buffer_records = default_buffer_records)
      : upstream_(std::move(upstream)), out_(out), owns_(false) {
    begin(buffer_records);
  }
  // Log to a new file at `path`; throws std::system_error when it cannot be made.
  logging(Upstream upstream, const std::string& path,
          std::size_t buffer_records = default_buffer_records)
      : upstream_(std::move(upstream)), out_(std::fopen(path.c_str(), "wb")), owns_(true) {
    if (out_ == nullptr)
      throw std::system_error(errno, std::generic_category(), "strata logging: " + path);
    begin(buffer_records);
  }
  logging(const logging&) = delete;
  logging& operator=(const logging&) = delete;
  // Write what is buffered, and close the file if the adaptor opened it.
  ~logging() {
    flush();
    if (owns_) std::fclose(out_);
  }

  // Allocate and log the call; a failed call is logged with address 0.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    const bool over = alignment > default_alignment;
    const trace::op kind = over ? trace::op::aligned : trace::op::malloc;
    const auto log2 = over ? static_cast<std::uint8_t>(std::countr_zero(alignment)) : 0;
    void* p;
    try {
      p = upstream_.allocate(bytes, alignment);
    } catch (...) {
      append(kind, 0, bytes, log2);
      throw;
    }
    append(kind, reinterpret_cast<std::uintptr_t>(p), bytes, log2);
    return p;
  }

  // Log the free, then free.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) {
    if (p == nullptr) return;  // as free(NULL): nothing to count, track or forward
    append(trace::op::free, reinterpret_cast<std::uintptr_t>(p), bytes, 0);
    upstream_.deallocate(p, bytes, alignment);
  }

  bool is_equal(const logging& other) const noexcept { return this == &other; }
  void release_unused() requires releasing_resource<Upstream> { upstream_.release_unused(); }

  // Write the buffered records to the stream and flush it.
  void flush() {
    std::lock_guard lock(mutex_);
    write_buffer();
    std::fflush(out_);
  }

  // Records logged so far, and whether every write succeeded.
  std::uint64_t records() const noexcept { return records_; }
  bool good() const noexcept { return good_; }
  Upstream& upstream() noexcept { return upstream_; }

 private:
  using clock = std::chrono::steady_clock;

  // Size the buffer and write the header.
  void begin(std::size_t buffer_records) {
    buffer_.reserve(buffer_records == 0 ? 1 : buffer_records);
    trace::file_header header{};
    std::memcpy(header.magic, trace::magic, sizeof header.magic);
    header.version = trace::version;
    header.flags = 0;
    good_ = std::fwrite(&header, sizeof header, 1, out_) == 1;
    start_ = clock::now();
  }

  // Add one record, writing the buffer out first when it is full.
  void append(trace::op kind, std::uintptr_t address, std::size_t bytes, std::uint8_t log2) {
    trace::record r{};
    r.address = address;
    r.size = bytes;
    r.thread = thread_number();
    r.kind = kind;
    r.alignment_log2 = log2;
    std::lock_guard lock(mutex_);
    r.time_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start_).count());
    if (buffer_.size() == buffer_.capacity()) write_buffer();
    buffer_.push_back(r);
    ++records_;
  }

  // Write the buffered records (the mutex is held).
  void write_buffer() {
    if (buffer_.empty()) return;
    good_ &=
        std::fwrite(buffer_.data(), sizeof(trace::record), buffer_.size(), out_) == buffer_.size();
    buffer_.clear();
  }

  [[no_unique_address]] Upstream upstream_;
  std::FILE* out_;
  bool owns_;
  bool good_ = true;
  clock::time_point start_;
  std::mutex mutex_;
  std::vector<trace::record> buffer_;
  std::uint64_t records_ = 0;
};

}  // namespace strata

#endif  // STRATA_LOGGING_HPP
