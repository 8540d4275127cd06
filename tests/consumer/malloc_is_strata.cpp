// Linked with strata's malloc override (shared or static) and calling neither
// malloc nor free itself, as most C++ programs do: every allocation must still
// be strata's, the C library's own (strdup allocates with whichever malloc the
// program has) and operator new's. strata_usable_size is 0 for a block strata
// did not hand out.
#include <strata/strata.h>

#include <cstdio>
#include <cstring>

int main() {
  char* copy = strdup("allocated by the C library");
  int* number = new int(42);
  bool malloc_is_strata = strata_usable_size(copy) != 0;
  bool new_is_strata = strata_usable_size(number) != 0;
  delete number;
  std::printf("consumer: malloc is %s, operator new is %s\n",
              malloc_is_strata ? "strata" : "NOT strata", new_is_strata ? "strata" : "NOT strata");
  return malloc_is_strata && new_is_strata ? 0 : 1;
}
