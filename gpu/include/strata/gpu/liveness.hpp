// strata GPU resources: the word by which a resource knows it is alive, so that
// a call on a destroyed resource, or a second destructor, is one line and abort
// instead of a crash, a hang or a silent reuse of freed state. A resource
// checks it at the start of each call (which takes the resource's mutex and
// calls the device anyway) and at the start of its destructor.
#ifndef STRATA_GPU_LIVENESS_HPP
#define STRATA_GPU_LIVENESS_HPP

#include <strata/resource.hpp>

#include <cstdint>
#include <cstdio>

namespace strata::gpu {

class liveness {
 public:
  // `kind` names the resource in the line ("device_pool"): a string literal.
  explicit liveness(const char* kind) noexcept : kind_(kind) {}
  liveness(const liveness&) = delete;
  liveness& operator=(const liveness&) = delete;

  // Abort unless alive: "strata: use of a destroyed <kind> in <kind>::<call>".
  void check(const char* call) const noexcept {
    if (read() != alive) [[unlikely]]
      report(call);
  }

  // The resource's destructor begins: abort if it ran before, else remember it
  // did. Volatile: a store into an object that is ending is otherwise dropped.
  void end() noexcept {
    if (read() != alive) [[unlikely]]
      report(nullptr);
    *static_cast<volatile std::uint64_t*>(&word_) = 0;
  }

 private:
  // Read as memory holds it, after a destructor too.
  std::uint64_t read() const noexcept {
    return *static_cast<const volatile std::uint64_t*>(&word_);
  }

  // "use of a destroyed <kind> in <kind>::<call>", or with no call (the
  // destructor's) "<kind> destroyed twice in <kind>::~<kind>".
  [[noreturn, gnu::cold, gnu::noinline]] void report(const char* call) const noexcept {
    char what[128];
    char where[128];
    if (call == nullptr) {
      std::snprintf(what, sizeof what, "%s destroyed twice", kind_);
      std::snprintf(where, sizeof where, "%s::~%s", kind_, kind_);
    } else {
      std::snprintf(what, sizeof what, "use of a destroyed %s", kind_);
      std::snprintf(where, sizeof where, "%s::%s", kind_, call);
    }
    ::strata::detail::report_misuse(what, where, this);
  }

  // Any value a fresh or zeroed object is unlikely to hold.
  static constexpr std::uint64_t alive = 0x53545241544C4956u;
  std::uint64_t word_ = alive;
  const char* kind_;
};

}  // namespace strata::gpu

#endif
