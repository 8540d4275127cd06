#!/usr/bin/env bash
# One compute-sanitizer tool over the GPU test programs that exercise the
# CUDA backend's allocators (gpu_caching_*_test, gpu_pool_*_test,
# gpu_device_test), each run on its CUDA test instances alone
# (--gtest_filter='*cuda*'). A program with no CUDA instance is listed and
# not run. Part of scripts/gpu-check.sh; needs a GPU.
#
# Usage: gpu/check/sanitize.sh TOOL TESTS_DIR RESULT_TSV [SECONDS_PER_PROGRAM]
#   TOOL        memcheck or racecheck
#   TESTS_DIR   the build tree's gpu/tests folder
#   RESULT_TSV  one line per program: program, CUDA tests, status, seconds, summary
# Exit status: 0 when every program ran clean, 1 otherwise, 2 on bad usage.
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
tool=$1 tests_dir=$2 result=$3 per_program=${4:-60}
# compute-sanitizer's exit status when it found errors (any value no test uses).
sanitizer_error=86

# The number of CUDA test instances a test program has.
count_cuda_tests() {
  "$1" --gtest_list_tests --gtest_filter='*cuda*' 2>/dev/null | grep -c '^  ' || true
}

# Run one program under the tool; print its status and summary line, tab-separated.
# The suites make CUDA calls fail on purpose (out of memory, foreign pointers)
# and check the answers, so failed API calls are not reported as errors: the
# tools judge device memory accesses and shared-memory races alone.
sanitize_program() {
  local program=$1 log=$2 rc=0
  timeout --kill-after=10 "$per_program" compute-sanitizer --tool "$tool" \
    --error-exitcode "$sanitizer_error" --report-api-errors no --print-limit 20 \
    "$program" --gtest_filter='*cuda*' --gtest_brief=1 >"$log" 2>&1 || rc=$?
  local summary
  summary=$(grep -E 'SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//') || true
  case $rc in
    0) printf 'clean\t%s\n' "$summary" ;;
    "$sanitizer_error") printf 'errors\t%s\n' "$summary" ;;
    124 | 137) printf 'timed out after %s s\t%s\n' "$per_program" "$summary" ;;
    *) printf 'failed (exit %s)\t%s\n' "$rc" "$summary" ;;
  esac
}

if ! command -v compute-sanitizer >/dev/null; then
  echo "compute-sanitizer is not on PATH (it ships with the CUDA toolkit, in its bin folder)" >&2
  exit 1
fi

: >"$result"
clean=1 programs=0
shopt -s nullglob
for program in "$tests_dir"/gpu_caching_*_test "$tests_dir"/gpu_pool_*_test \
  "$tests_dir"/gpu_device_test; do
  [ -x "$program" ] || continue
  name=$(basename "$program")
  programs=$((programs + 1))
  cuda_tests=$(count_cuda_tests "$program")
  if [ "$cuda_tests" -eq 0 ]; then
    printf '%s\t0\tno CUDA instances\t0\t\n' "$name" >>"$result"
    continue
  fi
  start=$SECONDS
  outcome=$(sanitize_program "$program" "${result%.tsv}-$name.log")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$cuda_tests" "${outcome%%$'\t'*}" \
    "$((SECONDS - start))" "${outcome#*$'\t'}" >>"$result"
  echo "$name ($cuda_tests CUDA tests): ${outcome%%$'\t'*}"
  [ "${outcome%%$'\t'*}" = clean ] || clean=0
done
if [ "$programs" -eq 0 ]; then
  echo "no test programs in $tests_dir (did the build fail?)" >&2
  exit 1
fi
[ "$clean" -eq 1 ]
