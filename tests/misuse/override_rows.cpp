// Misuse rows of the malloc override (libstrata-malloc.so): malloc and free
// answer as strata_malloc and strata_free (their rows); operator new answers
// as the standard says. These run in tests/override, under LD_PRELOAD, which a
// GoogleTest program linked with the library cannot be: here they are listed.
#include <vector>

#include "answers.hpp"
#include "rows.hpp"

namespace strata_misuse {

std::vector<row> override_rows() {
  using enum misuse_case;
  const char* as_free = "as strata_free (tests/override/foreign_free.c, api_edges.c)";
  return {
      {"operator new, operator delete (libstrata-malloc.so)",
       "strata.h",
       "C API: allocation",
       {
           returns(null_argument, "operator delete(nullptr) is a no-op", {}),
           returns(zero_size, "a unique block", {}),
           throws<std::bad_alloc>(
               huge_size,
               "std::bad_alloc after the new-handler, also once the address space ran out: "
               "the C++ runtime is looked up at load (tests/override/address_space_exhausted.cpp)",
               "", {}),
           throws<std::bad_alloc>(
               bad_alignment, "std::bad_alloc for an alignment that is not a power of two", "", {}),
           aborts(foreign_pointer, as_free, {}),
           aborts(interior_pointer, as_free, {}),
           aborts(double_free, as_free, {}),
           not_applicable(use_after_destroy, "the process's heap is never destroyed"),
           not_applicable(destroy_twice, "the process's heap is never destroyed"),
           returns(wrong_thread, "freed: any thread frees any block", {}),
           aborts(racing_free, as_free, {}),
           not_applicable(other_instance, "one heap per process"),
       }}};
}

}  // namespace strata_misuse
