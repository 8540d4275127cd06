#!/usr/bin/env bash
# Build and run every test: AddressSanitizer and ThreadSanitizer suites, the
# fuzzers, then the release suite of the tests those leave out, whose CTest
# summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
# run_preset PRESET [TARGET] [CACHE SETTINGS...]: configure with the tests, build TARGET (all).
run_preset() {
  local preset=$1 target=$2; shift 2
  cmake --preset "$preset" -DSTRATA_BUILD_TESTS=ON "$@" >/dev/null
  cmake --build --preset "$preset" -j "$jobs" --target "$target"
}

run_preset asan all -DSTRATA_BUILD_BENCH=OFF
ctest --preset asan -j "$jobs" --label-exclude no-sanitizer
# ThreadSanitizer runs the concurrency tests alone, so it builds their programs alone.
run_preset tsan strata_concurrency_tests -DSTRATA_BUILD_BENCH=OFF
ctest --preset tsan -j "$jobs" --label-regex concurrency

# The libFuzzer targets of tests/fuzz, built with Clang in a tree of their own:
# each fuzzes from its seed corpus for a bounded time (STRATA_FUZZ_SECONDS,
# default 20); new inputs go to build/fuzz/corpus, and a crash fails the run
# with its input saved in build/fuzz/artifacts.
fuzz_seconds=${STRATA_FUZZ_SECONDS:-20}
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_BUILD_TESTS=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_FUZZ=ON >/dev/null
cmake --build build/fuzz -j "$jobs" --target strata_fuzz
# fuzz TARGET: fuzz one target; on a crash print its log's tail and fail.
fuzz() {
  local target=$1 name
  name=$(basename "$target")
  mkdir -p "build/fuzz/corpus/$name" "build/fuzz/artifacts/$name"
  echo "strata: fuzzing $name for ${fuzz_seconds} s"
  if ! ASAN_OPTIONS=quarantine_size_mb=64 "$target" -max_total_time="$fuzz_seconds" \
      -artifact_prefix="build/fuzz/artifacts/$name/" \
      "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name" >"build/fuzz/$name.log" 2>&1; then
    tail -n 60 "build/fuzz/$name.log"
    echo "strata: $name failed; its input is in build/fuzz/artifacts/$name/" >&2
    return 1
  fi
}
# The fuzzers run one per core, in rounds.
fuzz_failed=0
running=()
wait_round() {
  local pid
  for pid in "${running[@]}"; do wait "$pid" || fuzz_failed=1; done
  running=()
}
for target in build/fuzz/tests/fuzz/*_fuzz; do
  fuzz "$target" &
  running+=($!)
  if [ ${#running[@]} -ge "$jobs" ]; then wait_round; fi
done
wait_round
[ "$fuzz_failed" = 0 ] || exit 1

# The release tree builds the library, the tools and the benchmarks (-Werror),
# and only the tests the sanitizer runs above leave out or skip in part (labels
# no-sanitizer and release): every test runs in one tree at least, most once.
# STRATA_ONLY_UNSANITIZED_TESTS=OFF (the default) builds them all.
run_preset release all -DSTRATA_BUILD_BENCH=ON -DSTRATA_ONLY_UNSANITIZED_TESTS=ON
ctest --preset release -j "$jobs" --label-exclude soak
