// The fuzz input read as a stream of choices: each call takes the next bytes,
// and an exhausted input reads as zeros, so every input decodes to a program.
#ifndef STRATA_FUZZ_INPUT_HPP
#define STRATA_FUZZ_INPUT_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace strata::fuzz {

class fuzz_input {
 public:
  fuzz_input(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  bool done() const noexcept { return size_ == 0; }

  // The next `bytes` (at most 8) bytes as a little-endian number.
  std::uint64_t number(std::size_t bytes) noexcept {
    std::uint64_t value = 0;
    std::size_t taken = bytes < size_ ? bytes : size_;
    std::memcpy(&value, data_, taken);
    data_ += taken;
    size_ -= taken;
    return value;
  }

  std::uint8_t byte() noexcept { return static_cast<std::uint8_t>(number(1)); }

  // A number in [0, bound); bound is at most 2^16.
  std::size_t below(std::size_t bound) noexcept { return bound == 0 ? 0 : number(2) % bound; }

  // One of `choices`, picked by the next byte.
  template <class T>
  T pick(std::initializer_list<T> choices) noexcept {
    return choices.begin()[byte() % choices.size()];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_INPUT_HPP
