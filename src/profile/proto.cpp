// Protocol buffers encoding (see proto.hpp).
#include "profile/proto.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::profile {

namespace {

// A varint in at most 10 bytes; its length.
std::size_t encode_varint(std::uint64_t value, std::uint8_t (&out)[10]) noexcept {
  std::size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<std::uint8_t>(value | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<std::uint8_t>(value);
  return n;
}

std::uint64_t key(std::uint32_t field, wire type) noexcept {
  return std::uint64_t{field} << 3 | static_cast<std::uint8_t>(type);
}

// A field's key and length, before its payload.
void emit_header(sink& out, std::uint32_t field, std::size_t length) noexcept {
  std::uint8_t bytes[10];
  out.write(bytes, encode_varint(key(field, wire::bytes), bytes));
  out.write(bytes, encode_varint(length, bytes));
}

}  // namespace

void sink::write(const void* data, std::size_t length) noexcept {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (length > 0) {
    if (length_ == capacity_ && flush() != 0) return;
    std::size_t n = length < capacity_ - length_ ? length : capacity_ - length_;
    std::memcpy(buffer_ + length_, bytes, n);
    length_ += n;
    bytes += n;
    length -= n;
  }
}

// A short write is retried; the first error stops writing for good.
int sink::flush() noexcept {
  std::size_t done = 0;
  while (error_ == 0 && done < length_) {
    ssize_t n = ::write(fd_, buffer_ + done, length_ - done);
    if (n < 0 && errno != EINTR) error_ = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  length_ = 0;
  return error_;
}

void message::raw(const void* data, std::size_t length) noexcept {
  if (length > sizeof(buffer_) - length_) length = sizeof(buffer_) - length_;
  std::memcpy(buffer_ + length_, data, length);
  length_ += length;
}

void message::varint(std::uint64_t value) noexcept {
  std::uint8_t bytes[10];
  raw(bytes, encode_varint(value, bytes));
}

message& message::varint_field(std::uint32_t field, std::uint64_t value) noexcept {
  varint(key(field, wire::varint));
  varint(value);
  return *this;
}

message& message::bytes_field(std::uint32_t field, const void* data, std::size_t length) noexcept {
  varint(key(field, wire::bytes));
  varint(length);
  raw(data, length);
  return *this;
}

message& message::packed_field(std::uint32_t field, const std::uint64_t* values,
                               std::size_t count) noexcept {
  std::uint8_t packed[10 * 32];
  std::size_t length = 0;
  for (std::size_t i = 0; i < count && length + 10 <= sizeof(packed); ++i) {
    std::uint8_t bytes[10];
    std::size_t n = encode_varint(values[i], bytes);
    std::memcpy(packed + length, bytes, n);
    length += n;
  }
  return bytes_field(field, packed, length);
}

void message::emit(sink& out, std::uint32_t field) const noexcept {
  emit_bytes(out, field, buffer_, length_);
}

void emit_bytes(sink& out, std::uint32_t field, const void* data, std::size_t length) noexcept {
  emit_header(out, field, length);
  out.write(data, length);
}

}  // namespace strata::profile
