#!/usr/bin/env bash
# Instructions per step of one of issue 35's heap scenarios (scenario.c) under each
# allocator, from callgrind: the difference between 2N and N steps, so set-up cancels.
# Usage: bench/callgrind/scenario.sh NAME [N] [strata-malloc library]
#   NAME: random-working-set, leak-loop or server-handoff; N defaults to 100,000.
set -euo pipefail
name=$1
steps=${2:-100000}
here=$(cd "$(dirname "$0")" && pwd)
strata=${3:-$here/../../build/release/libstrata-malloc.so}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"
# server-handoff's steps run in threads of their own: callgrind collects those.
collect=run
[ "$name" = server-handoff ] && collect=handoff_turn
cc -O2 "$here/scenario.c" -o "$work/scenario" -lm -lpthread

# Total instructions collected in run() (or the threads' turns) for N steps under library $1 ("glibc" for none).
instructions() {
  local preload=()
  [ "$1" != glibc ] && preload=(env "LD_PRELOAD=$1")
  callgrind_total "$work/cg.$2" --trace-children=yes --toggle-collect="$collect" -- \
    "${preload[@]}" "$work/scenario" "$name" "$2"
}

lib=/usr/lib/x86_64-linux-gnu
mimalloc3=$here/../../build/mimalloc3/lib/libmimalloc.so.3  # scripts/install-deps.sh mimalloc3
for entry in "strata=$strata" glibc=glibc "mimalloc3=$mimalloc3" \
  "tcmalloc=$lib/libtcmalloc_minimal.so.4"; do
  allocator=${entry%%=*} library=${entry#*=}
  if [ "$library" != glibc ] && [ ! -f "$library" ]; then echo "$allocator: missing"; continue; fi
  a=$(instructions "$library" "$steps")
  b=$(instructions "$library" $((2 * steps)))
  echo "$allocator: $(((b - a) / steps)) instructions per $name step"
done
