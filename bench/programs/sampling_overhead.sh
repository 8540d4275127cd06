#!/usr/bin/env bash
# The time cost of strata's guarded sampling and heap profiler on real programs,
# beside jemalloc's profiler: each workload of workload.sh timed under strata
# with both off, with STRATA_GUARDED_SAMPLE_RATE (default 5000), with
# STRATA_PROFILE at its default rate, and under jemalloc without and with
# MALLOC_CONF=prof:true,lg_prof_sample:19; runs interleaved, the medians of
# CPU time (user + system, of the workload and its children: less blurred than
# wall time on a shared machine) printed with each on-configuration's ratio to
# its off one.
#
# Usage: bench/programs/sampling_overhead.sh [-n RUNS] [-r RATE] [-s STRATA_SO] [-i INPUTS] [PROGRAM...]
#   PROGRAM  python sqlite git gcc (default: python sqlite)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=5 rate=5000
strata=$root/build/release/libstrata-malloc.so
inputs=$root/build/programs-inputs
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
while getopts "n:r:s:i:h" option; do
  case "$option" in
    n) runs=$OPTARG ;;
    r) rate=$OPTARG ;;
    s) strata=$OPTARG ;;
    i) inputs=$OPTARG ;;
    *) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(python sqlite)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

configs=(strata guarded profile jemalloc jemalloc_prof)
# environment CONFIG: the env(1) assignments of one configuration.
environment() {
  case "$1" in
    strata) echo "LD_PRELOAD=$strata" ;;
    guarded) echo "LD_PRELOAD=$strata STRATA_GUARDED_SAMPLE_RATE=$rate" ;;
    profile) echo "LD_PRELOAD=$strata STRATA_PROFILE=$scratch/heap.prof" ;;
    jemalloc) echo "LD_PRELOAD=$jemalloc" ;;
    jemalloc_prof) echo "LD_PRELOAD=$jemalloc MALLOC_CONF=prof:true,lg_prof_sample:19" ;;
  esac
}

# jemalloc's profiler needs a build configured with it: say so when it is not.
if ! MALLOC_CONF=stats_print:true LD_PRELOAD=$jemalloc /bin/true 2>&1 | grep -q "config.prof: true"; then
  echo "sampling_overhead.sh: $jemalloc was built without profiling (config.prof false)" >&2
fi

for program in "${programs[@]}"; do
  LD_PRELOAD= "$here/make_inputs.sh" "$inputs" "$program"
done
for run in $(seq 1 "$runs"); do
  for program in "${programs[@]}"; do
    for config in "${configs[@]}"; do
      # shellcheck disable=SC2046
      env $(environment "$config") /usr/bin/time -f "%U %S" -o "$scratch/time" \
        "$here/workload.sh" "$program" "$inputs" >/dev/null 2>"$scratch/err" ||
        { echo "$program under $config failed:" >&2; tail -3 "$scratch/err" >&2; exit 1; }
      tail -n 1 "$scratch/time" | awk '{ print $1 + $2 }' >>"$scratch/$program.$config"
    done
  done
done

# median FILE: the median of its numbers.
median() {
  sort -g "$1" | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "| program | strata off | guarded 1/$rate | profiler | jemalloc | jemalloc prof:true |"
echo "| --- | --- | --- | --- | --- | --- |"
for program in "${programs[@]}"; do
  declare -A m=()
  for config in "${configs[@]}"; do m[$config]=$(median "$scratch/$program.$config"); done
  awk -v p="$program" -v s="${m[strata]}" -v g="${m[guarded]}" -v f="${m[profile]}" \
    -v j="${m[jemalloc]}" -v jp="${m[jemalloc_prof]}" 'BEGIN {
    printf "| %s | %.2f s | %.2f s (%+.1f%%) | %.2f s (%+.1f%%) | %.2f s | %.2f s (%+.1f%%) |\n",
      p, s, g, (g / s - 1) * 100, f, (f / s - 1) * 100, j, jp, (jp / j - 1) * 100 }'
done
