// strata-bench: runs the seed reports' scenarios side by side (filled by the benchmark issue).
#include <cstdio>

int main() {
  std::puts("strata-bench: no scenarios yet");
  return 0;
}
