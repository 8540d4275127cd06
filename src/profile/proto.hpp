// A minimal protocol buffers encoder for the profile: messages built in a
// fixed buffer (every message of a profile but the outermost is small) and a
// file sink with a mapped buffer, so writing a profile never allocates.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::profile {

// Wire types of the fields written here.
enum class wire : std::uint8_t { varint = 0, bytes = 2 };

// Where encoded bytes go: a buffered file, the first error kept.
class sink {
 public:
  // Writes to `fd` through `buffer` of `capacity` bytes (mapped by the caller).
  sink(int fd, std::uint8_t* buffer, std::size_t capacity) noexcept
      : fd_(fd), buffer_(buffer), capacity_(capacity) {}
  void write(const void* data, std::size_t length) noexcept;
  // Write out what is buffered; 0, or the errno of the first failed write.
  int flush() noexcept;

 private:
  int fd_;
  std::uint8_t* buffer_;
  std::size_t capacity_;
  std::size_t length_ = 0;
  int error_ = 0;
};

// One message under construction; too long a message is cut short (a stack's
// location ids take at most 32 * 10 bytes, a mapping's fields fewer).
class message {
 public:
  message& varint_field(std::uint32_t field, std::uint64_t value) noexcept;
  message& bytes_field(std::uint32_t field, const void* data, std::size_t length) noexcept;
  // A packed repeated varint field.
  message& packed_field(std::uint32_t field, const std::uint64_t* values,
                        std::size_t count) noexcept;
  // Append this message to `out` as field `field` of the enclosing one.
  void emit(sink& out, std::uint32_t field) const noexcept;
  // Append its fields to `out` as fields of the enclosing message itself.
  void emit_raw(sink& out) const noexcept { out.write(buffer_, length_); }

 private:
  void varint(std::uint64_t value) noexcept;
  void raw(const void* data, std::size_t length) noexcept;
  std::uint8_t buffer_[1024];
  std::size_t length_ = 0;
};

// A length-delimited field (a string, say) written straight to `out`.
void emit_bytes(sink& out, std::uint32_t field, const void* data, std::size_t length) noexcept;

}  // namespace strata::profile
