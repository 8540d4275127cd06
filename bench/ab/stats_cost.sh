#!/usr/bin/env bash
# What always-on statistics cost the malloc+free pair: strata-malloc as it is
# against a build whose fast paths count nothing (stats_off.patch), both built
# here with the same flags and timed in one process by pair_ab.
# Usage: bench/ab/stats_cost.sh [ROUNDS [SIZE...]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-300}
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(16 64 256 1024 4096 16384 65536 262144 1048576 4194304)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Build libstrata-malloc.so from a copy of the sources (patched with $2 if given) into $work/$1.
build() {
  mkdir -p "$work/$1"
  cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/include" "$root/src" "$work/$1/"
  [ -n "${2:-}" ] && (cd "$work/$1" && git apply "$2")
  cmake -S "$work/$1" -B "$work/$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
  cmake --build "$work/$1/build" --target strata-malloc >/dev/null
  cp "$work/$1/build/libstrata-malloc.so" "$work/stats-$1.so"
}
build on
build off "$here/stats_off.patch"
cc -O2 -DPAIR_AB_SYSTEM_LIBDIR='"/usr/lib/x86_64-linux-gnu"' \
  -DPAIR_AB_MIMALLOC3_LIBRARY="\"$root/build/mimalloc3/lib/libmimalloc.so.3\"" \
  "$here/pair_ab.c" -o "$work/pair_ab" -ldl
"$work/pair_ab" "$work/stats-on.so" "$work/stats-off.so" "$rounds" "${sizes[@]}"
