#!/usr/bin/env bash
# Build and run every test: AddressSanitizer and ThreadSanitizer suites first,
# then the release suite, whose CTest summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
run_preset() {
  local preset=$1; shift
  cmake --preset "$preset" -DSTRATA_BUILD_TESTS=ON "$@" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
}

run_preset asan -DSTRATA_BUILD_BENCH=OFF
ctest --preset asan -j "$jobs" --label-exclude no-sanitizer
run_preset tsan -DSTRATA_BUILD_BENCH=OFF
ctest --preset tsan -j "$jobs" --label-regex concurrency
run_preset release -DSTRATA_BUILD_BENCH=ON
ctest --preset release -j "$jobs"
