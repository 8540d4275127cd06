// Prints docs/misuse.md from the misuse matrix: the host rows, then, where the
// GPU layer is built, its rows (gpu/tests/misuse).
#include <cstdio>
#include <vector>

#include "misuse_matrix.hpp"
#include "misuse_tables.hpp"
#if STRATA_MISUSE_GPU_ROWS
#include "gpu_rows.hpp"
#endif

int main() {
  std::vector<strata_misuse::row> rows = strata_misuse::misuse_matrix();
#if STRATA_MISUSE_GPU_ROWS
  for (const strata_misuse::row& r : strata_misuse::gpu_misuse_rows()) rows.push_back(r);
#endif
  std::fputs(strata_misuse::misuse_page(rows).c_str(), stdout);
  return 0;
}
