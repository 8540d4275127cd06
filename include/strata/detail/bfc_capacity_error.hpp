// The exception bfc and buddy throw for a request they can never hold: a
// std::bad_alloc whose what() names the size asked for and the limit it broke.
#ifndef STRATA_DETAIL_BFC_CAPACITY_ERROR_HPP
#define STRATA_DETAIL_BFC_CAPACITY_ERROR_HPP

#include <cstddef>
#include <new>
#include <string>

namespace strata {

// std::bad_alloc with a message, so a failed request says what it asked for.
class capacity_error : public std::bad_alloc {
 public:
  // "strata: <who> cannot hold a request of <bytes> bytes (<why>)".
  capacity_error(const char* who, std::size_t bytes, const char* why)
      : message_(std::string("strata: ") + who + " cannot hold a request of " +
                 std::to_string(bytes) + " bytes (" + why + ")"),
        bytes_(bytes) {}

  const char* what() const noexcept override { return message_.c_str(); }
  // The size of the request that failed.
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::string message_;
  std::size_t bytes_;
};

}  // namespace strata

#endif  // STRATA_DETAIL_BFC_CAPACITY_ERROR_HPP
