#!/usr/bin/env bash
# Instructions per malloc+free pair under each allocator, from callgrind: the
# difference between 200,000 and 100,000 pairs, so set-up costs cancel out.
# Usage: bench/callgrind/count.sh [SIZE] [strata-malloc library] [usable|aligned]
# With `usable`, each pair also calls malloc_usable_size; with `aligned`, the
# blocks come from posix_memalign at 64 bytes (pair.c).
set -euo pipefail
size=${1:-64}
here=$(cd "$(dirname "$0")" && pwd)
strata=${2:-$here/../../build/release/libstrata-malloc.so}
mode=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"
cc -O2 "$here/pair.c" -o "$work/pair"

# Total instructions collected in run() for N pairs under library $1 ("glibc" for none).
instructions() {
  local preload=()
  [ "$1" != glibc ] && preload=(env "LD_PRELOAD=$1")
  callgrind_total "$work/cg.$2" --trace-children=yes --toggle-collect='run*' -- \
    "${preload[@]}" "$work/pair" "$size" "$2" $mode
}

lib=/usr/lib/x86_64-linux-gnu
mimalloc3=$here/../../build/mimalloc3/lib/libmimalloc.so.3  # scripts/install-deps.sh mimalloc3
for entry in "strata=$strata" glibc=glibc "mimalloc=$lib/libmimalloc.so.2" "mimalloc3=$mimalloc3" \
  "jemalloc=$lib/libjemalloc.so.2" "tcmalloc=$lib/libtcmalloc_minimal.so.4"; do
  name=${entry%%=*} library=${entry#*=}
  if [ "$library" != glibc ] && [ ! -f "$library" ]; then echo "$name: missing"; continue; fi
  a=$(instructions "$library" 100000)
  b=$(instructions "$library" 200000)
  echo "$name: $(((b - a) / 100000)) instructions per $size-byte pair${mode:+ ($mode)} (loop included)"
done
