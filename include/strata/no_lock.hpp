// The lock that does nothing, for allocators and adaptors that take a Lock
// parameter (pools, tracking) and are used by one thread at a time. One
// definition, so every strata header can be included with every other.
#ifndef STRATA_NO_LOCK_HPP
#define STRATA_NO_LOCK_HPP

namespace strata {

struct no_lock {
  void lock() noexcept {}
  void unlock() noexcept {}
};

}  // namespace strata

#endif  // STRATA_NO_LOCK_HPP
