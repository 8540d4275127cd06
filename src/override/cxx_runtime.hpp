// The C++ runtime's part in a failed operator new (new_delete.cpp).
#pragma once

namespace strata::override_new {

// Look the process's C++ runtime up now, at load, while memory is plentiful:
// at the first failed operator new there may be none left for dlopen, and
// std::bad_alloc could not be thrown. A runtime loaded later is looked up at
// its first failure.
void find_cxx_runtime_early() noexcept;

}  // namespace strata::override_new
