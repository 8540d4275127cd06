// Pinned host memory owned for one test, filled and compared byte by byte.
#ifndef STRATA_GPU_TESTS_PINNED_BUFFER_HPP
#define STRATA_GPU_TESTS_PINNED_BUFFER_HPP

#include <strata/gpu/device.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::gpu::testing {

class pinned_buffer {
 public:
  // Zeroed, so a copy that never happened shows.
  pinned_buffer(device& dev, std::size_t bytes)
      : dev_(dev), bytes_(bytes), data_(static_cast<std::uint8_t*>(dev.allocate_pinned(bytes))) {
    std::memset(data_, 0, bytes_);
  }
  ~pinned_buffer() { dev_.deallocate_pinned(data_); }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }

  // Write the pattern that `seed` names: byte i is (seed + i * 7) mod 256.
  void fill(unsigned seed) const {
    for (std::size_t i = 0; i < bytes_; ++i) data_[i] = static_cast<std::uint8_t>(seed + i * 7);
  }

  // Whether the buffer holds the pattern that `seed` names.
  bool holds(unsigned seed) const {
    for (std::size_t i = 0; i < bytes_; ++i)
      if (data_[i] != static_cast<std::uint8_t>(seed + i * 7)) return false;
    return true;
  }

 private:
  device& dev_;
  std::size_t bytes_;
  std::uint8_t* data_;
};

}  // namespace strata::gpu::testing

#endif
