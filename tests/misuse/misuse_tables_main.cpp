// Prints docs/misuse.md from the misuse matrix.
#include <cstdio>

#include "misuse_tables.hpp"

int main() {
  std::fputs(strata_misuse::misuse_page().c_str(), stdout);
  return 0;
}
