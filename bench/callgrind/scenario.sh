#!/usr/bin/env bash
# Instructions per step of one of issue 35's heap scenarios (scenario.c) under each
# allocator, from callgrind: the difference between 2N and N steps, so set-up cancels.
# With CACHE=1 it also counts, over the whole program under cachegrind (2 MiB last
# level), the first- and last-level misses per step: where instructions tie, these
# (and the TLB and page faults no simulator counts) decide the time.
# Usage: [CACHE=1] bench/callgrind/scenario.sh NAME [N] [strata-malloc library]
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

# First-level and last-level misses (reads and writes) of the whole run for N steps.
misses() {
  local preload=()
  [ "$1" != glibc ] && preload=(env "LD_PRELOAD=$1")
  valgrind --tool=cachegrind --cache-sim=yes --LL=2097152,16,64 --trace-children=yes \
    --cachegrind-out-file="$work/cache.$2.%p" "${preload[@]}" "$work/scenario" "$name" "$2" \
    >/dev/null 2>&1
  cat "$work"/cache."$2".* | awk '/^summary:/ { first += $6 + $9; last += $7 + $10 }
    END { print first, last }'
  rm -f "$work"/cache."$2".*
}

lib=/usr/lib/x86_64-linux-gnu
mimalloc3=$here/../../build/mimalloc3/lib/libmimalloc.so.3  # scripts/install-deps.sh mimalloc3
for entry in "strata=$strata" glibc=glibc "mimalloc=$lib/libmimalloc.so.2" \
  "mimalloc3=$mimalloc3" "jemalloc=$lib/libjemalloc.so.2" "tcmalloc=$lib/libtcmalloc_minimal.so.4"; do
  allocator=${entry%%=*} library=${entry#*=}
  if [ "$library" != glibc ] && [ ! -f "$library" ]; then echo "$allocator: missing"; continue; fi
  a=$(instructions "$library" "$steps")
  b=$(instructions "$library" $((2 * steps)))
  echo "$allocator: $(((b - a) / steps)) instructions per $name step"
  if [ "${CACHE:-0}" = 1 ]; then
    read -r first_a last_a < <(misses "$library" "$steps")
    read -r first_b last_b < <(misses "$library" $((2 * steps)))
    awk -v f=$((first_b - first_a)) -v l=$((last_b - last_a)) -v n="$steps" -v a="$allocator" \
      'BEGIN { printf "%s: %.2f first-level and %.3f last-level misses per step\n", a, f / n, l / n }'
  fi
done
