// Writing the profile out: at exit, on strata_profile_dump(path) and on the
// signal STRATA_PROFILE_SIGNAL names; the leak report at exit
// (STRATA_PROFILE_LEAKS).
#pragma once

namespace strata::profile {

// Remember where the exit profile goes (`path`, null for none), whether to
// report leaks at exit, and install the exit hook, the fork handlers and the
// handler for `signal` (0: none). `rate` is the sampling period a profile names.
void dump_start(const char* path, bool leaks, int signal, double rate) noexcept;

// Write the profile to `path` (pprof's profile.proto) and `path`.folded (the
// live bytes as folded stacks); 0, or an errno value.
int dump(const char* path) noexcept;

}  // namespace strata::profile
