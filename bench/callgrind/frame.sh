#!/usr/bin/env bash
# Instructions per allocation of strata's frame allocator (default and minimal mode)
# and the plain bump arena of strata-bench, from callgrind: the difference between
# 200 and 100 frames, so set-up costs cancel out; frame begin and end not counted.
# Build the driver first:
#   cmake --build build/release --target callgrind-frame_allocate
# Usage: bench/callgrind/frame.sh [driver]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
driver=${1:-$here/../../build/release/bench/callgrind/callgrind-frame_allocate}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"

# Total instructions collected in run() for N frames of strategy $1, shape $2.
instructions() {
  callgrind_total "$work/cg.$1.$2.$3" --toggle-collect='*run_*' -- "$driver" "$1" "$2" "$3"
}

for shape in 64 mix particles; do
  allocations=1000
  [ "$shape" = particles ] && allocations=10000
  for strategy in default minimal bump; do
    a=$(instructions "$strategy" "$shape" 100)
    b=$(instructions "$strategy" "$shape" 200)
    echo "$shape $strategy: $(echo "scale=2; ($b - $a) / (100 * $allocations)" | bc) instructions per allocation (loop included)"
  done
done
