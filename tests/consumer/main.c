/* Links the installed libstrata through its CMake package and uses the C API. */
#include <stdio.h>
#include <strata/strata.h>
#include <string.h>

int main(void) {
  const char* name = strata_option_name(STRATA_OPTION_PURGE_DELAY_MS);
  long delay = strata_option_get(STRATA_OPTION_PURGE_DELAY_MS);
  if (name == NULL || strcmp(name, "PURGE_DELAY_MS") != 0) return 1;
  printf("consumer: linked strata, STRATA_%s=%ld\n", name, delay);
  return 0;
}
