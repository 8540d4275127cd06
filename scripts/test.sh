#!/usr/bin/env bash
# Build and run every test: AddressSanitizer and ThreadSanitizer suites first,
# then the release suite, whose CTest summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
run_preset() {
  local preset=$1; shift
  cmake --preset "$preset" -DSTRATA_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
}

run_preset asan
ctest --preset asan -j "$jobs" --label-exclude no-sanitizer
run_preset tsan
ctest --preset tsan -j "$jobs" --label-regex concurrency
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
