// strata GPU resources: the word by which a resource knows it is alive (the
// host allocators' lifetime_word, with the resource's name), so that
// a call on a destroyed resource, or a second destructor, is one line and abort
// instead of a crash, a hang or a silent reuse of freed state. A resource
// checks it at the start of each call (which takes the resource's mutex and
// calls the device anyway) and at the start of its destructor.
#ifndef STRATA_GPU_LIVENESS_HPP
#define STRATA_GPU_LIVENESS_HPP

#include <strata/resource.hpp>

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
    if (!word_.alive()) [[unlikely]]
      report(call);
  }

  // The resource's destructor begins: abort if it ran before, else remember it did.
  void end() noexcept {
    if (!word_.alive()) [[unlikely]]
      report(nullptr);
    word_.end("destroyed twice", kind_, this);
  }

 private:
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

  ::strata::detail::lifetime_word word_;
  const char* kind_;
};

}  // namespace strata::gpu

#endif
