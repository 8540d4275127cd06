#!/usr/bin/env bash
# Run a command under glibc and under the preloaded allocator; pass when both exit
# 0 and print byte-identical standard output.
#
# Usage: compare_with_glibc.sh PRELOAD COMMAND [ARGS...]
#   PRELOAD as for run_preloaded.sh ($OVERRIDE_PRELOAD replaces it; 77 = not built).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/preload.sh"

preload=$(preload_resolve "$1")
shift
preload_env=$(preload_environment "$preload")
timeout_s=${OVERRIDE_TEST_TIMEOUT:-150}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# run_once LABEL ENV...: run the command with the given environment, keeping its output.
run_once() {
  local label=$1 status=0
  shift
  timeout --kill-after=5 "$timeout_s" env "$@" "${command[@]}" \
    >"$scratch/$label.out" 2>"$scratch/$label.err" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "FAIL: under $label, '${command[*]}' exited with status $status" >&2
    tail -n 30 "$scratch/$label.err" >&2
    exit 1
  fi
}

command=("$@")
run_once glibc OVERRIDE_TEST_STRICT=1
# shellcheck disable=SC2086
run_once preloaded $preload_env
if ! cmp -s "$scratch/glibc.out" "$scratch/preloaded.out"; then
  echo "FAIL: output under $preload differs from glibc:" >&2
  diff "$scratch/glibc.out" "$scratch/preloaded.out" | head -n 40 >&2
  exit 1
fi
echo "same output under glibc and $preload ($(wc -c <"$scratch/glibc.out") bytes):"
head -n 20 "$scratch/preloaded.out"
