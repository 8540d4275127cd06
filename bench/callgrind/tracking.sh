#!/usr/bin/env bash
# Instructions per allocate+deallocate pair through the tracking adaptor over the
# strata heap (exact, exact with no_lock, sampled 1 per 512 KiB, and the statistics
# adaptor for comparison), from callgrind: the difference between 200,000 and 100,000
# pairs, so set-up costs cancel out. Build the driver first:
#   cmake --build build/release --target callgrind-tracking_pair
# Usage: [MODES="bare sampled"] bench/callgrind/tracking.sh [driver]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
driver=${1:-$here/../../build/release/bench/callgrind/callgrind-tracking_pair}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"

# Total instructions of the whole program for N pairs in mode $1 (no
# --toggle-collect: a jump back from a function's cold part toggles it again).
instructions() {
  callgrind_total "$work/cg.$1.$2" -- "$driver" "$1" "$2"
}

for mode in ${MODES:-bare tracked one-thread sampled statistics}; do
  a=$(instructions "$mode" 100000)
  b=$(instructions "$mode" 200000)
  echo "$mode: $(((b - a) / 100000)) instructions per pair (loop included)"
done
