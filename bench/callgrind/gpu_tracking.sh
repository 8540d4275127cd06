#!/usr/bin/env bash
# Instructions per synchronous allocate+deallocate pair through the GPU tracking
# adaptor over a device_pool on the simulated device (the pool alone, tracking
# compiled out, exact, and sampled 1 per 512 KiB), from callgrind: the difference
# between 200,000 and 100,000 pairs, so set-up costs cancel out. Build the driver
# first (a release tree with -DSTRATA_BUILD_BENCH=ON):
#   cmake --build build/release --target callgrind-gpu_tracking_pair
# Usage: bench/callgrind/gpu_tracking.sh [driver]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
driver=${1:-$here/../../build/release/gpu/bench/callgrind-gpu_tracking_pair}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"

# Total instructions collected in run() for N pairs in mode $1.
instructions() {
  callgrind_total "$work/cg.$1.$2" --toggle-collect='*run<*' -- "$driver" "$1" "$2"
}

for mode in bare off exact sampled; do
  a=$(instructions "$mode" 100000)
  b=$(instructions "$mode" 200000)
  echo "$mode: $(((b - a) / 100000)) instructions per pair (loop included)"
done
