#!/usr/bin/env bash
# Instructions of a whole allocation-heavy program (bench/programs/alloc_heavy.py
# under python3 with PYTHONMALLOC=malloc) under the strata override with guarded
# sampling and the heap profiler off, guarded sampling at 1 in RATE, the profiler
# at its default rate, and under jemalloc without and with its profiler: the
# stable measure of what the samplers' hook costs a real program (system calls,
# so the draws' mprotect and mmap, are not counted).
# Usage: bench/callgrind/sampling.sh [RATE] [strata-malloc library]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rate=${1:-5000}
strata=${2:-$here/../../build/release/libstrata-malloc.so}
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/callgrind_total.sh"

# Instructions of the whole run with the env(1) assignments given.
instructions() {
  callgrind_total "$work/cg" --trace-children=yes -- \
    env PYTHONMALLOC=malloc "$@" /usr/bin/python3 "$here/../programs/alloc_heavy.py"
}

off=$(instructions "LD_PRELOAD=$strata")
echo "strata, both off: $off instructions"
for config in "guarded 1/$rate:STRATA_GUARDED_SAMPLE_RATE=$rate" \
  "profiler:STRATA_PROFILE=$work/profile"; do
  on=$(instructions "LD_PRELOAD=$strata" "${config#*:}")
  echo "strata, ${config%%:*}: $on instructions ($(awk -v a="$on" -v b="$off" 'BEGIN { printf "%+.2f%%", (a / b - 1) * 100 }'))"
done
if [ -f "$jemalloc" ]; then
  echo "jemalloc: $(instructions "LD_PRELOAD=$jemalloc") instructions"
  echo "jemalloc prof:true,lg_prof_sample:19: $(instructions "LD_PRELOAD=$jemalloc" MALLOC_CONF=prof:true,lg_prof_sample:19) instructions"
fi
