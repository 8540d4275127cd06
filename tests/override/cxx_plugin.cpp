// A C++ library a C program loads with dlopen: the first C++ code in the
// process, so the override meets its C++ runtime only now (see c_program.c).
#include <new>
#include <stdexcept>

namespace {

// Beyond any heap: every operator new of it fails.
constexpr std::size_t impossible_size = std::size_t{1} << 62;

int handler_calls = 0;

// A new-handler that gives up after its second call, by throwing.
void throwing_new_handler() {
  if (++handler_calls == 2) throw std::bad_alloc();
}

// A new-handler whose own exception must reach operator new's caller.
void custom_error_handler() {
  throw std::runtime_error("from the new-handler");
}

}  // namespace

// 0 when every failing operator new answered as the standard says, else the
// number of the first check that did not.
extern "C" __attribute__((visibility("default"))) int cxx_plugin_failures_answered() {
  try {
    ::operator delete(::operator new(impossible_size));
    return 1;
  } catch (const std::bad_alloc&) {
  }
  try {
    ::operator delete(::operator new (impossible_size, std::align_val_t{256}));
    return 2;
  } catch (const std::bad_alloc&) {
  }
  if (::operator new(impossible_size, std::nothrow) != nullptr) return 3;
  std::set_new_handler(throwing_new_handler);
  if (::operator new[](impossible_size, std::nothrow) != nullptr || handler_calls != 2) return 4;
  handler_calls = 0;
  if (::operator new (impossible_size, std::align_val_t{64}, std::nothrow) != nullptr ||
      handler_calls != 2)
    return 5;
  std::set_new_handler(custom_error_handler);
  try {
    ::operator delete(::operator new(impossible_size));
    return 6;
  } catch (const std::runtime_error&) {
  }
  std::set_new_handler(nullptr);
  int* value = new int(42);
  int answer = *value == 42 ? 0 : 7;
  delete value;
  return answer;
}
