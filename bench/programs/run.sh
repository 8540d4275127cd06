#!/usr/bin/env bash
# Time real programs under each allocator and print a Markdown table.
#
# Usage: bench/programs/run.sh [-n RUNS] [-s STRATA_SO] [-i INPUTS_DIR] [-t THREAD_MIX] [PROGRAM...]
#   PROGRAM   python sqlite sqlite_insert git gcc redis thread_mix, and the small programs true
#             ls tiny python_start (default: all of them)
#   -n RUNS   runs per program and allocator; the table shows the medians (default 5)
#   -s PATH   the strata override (default build/release/libstrata-malloc.so)
#   -i DIR    where the generated inputs live (default build/programs-inputs)
#   -t PATH   the thread_mix test program (default build/release/tests/override/override_thread_mix)
# Each cell is the median wall time and the median peak RSS (largest process of the
# program, from /usr/bin/time; for redis, the benchmark's time and the server's VmHWM),
# for glibc, mimalloc (Debian's 2.0.9), mimalloc3 (3.4.3 from PyPI: scripts/install-deps.sh
# mimalloc3), jemalloc, tcmalloc, tbbmalloc and strata, each preloaded with
# LD_PRELOAD (glibc's libc too, so that it comes before an allocator a program links
# itself: redis-server links jemalloc). An allocator whose library is absent shows as
# "missing"; a program not installed is skipped; a run whose output differs from
# glibc's is flagged. Runs are interleaved across allocators so a drift in machine
# load hits all of them alike. The small programs start directly (no shell):
# /bin/true, ls -l /usr/bin, tiny.c (a few KiB in 48 blocks) and python3 -c pass;
# what an allocator adds to their peak RSS, every short-lived process pays (times
# under 1 s show in ms, RSS under 10 MiB with two decimals).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
libdir=/usr/lib/x86_64-linux-gnu

runs=5
strata=$root/build/release/libstrata-malloc.so
inputs=$root/build/programs-inputs
thread_mix=$root/build/release/tests/override/override_thread_mix
while getopts "n:s:i:t:h" option; do
  case "$option" in
    n) runs=$OPTARG ;;
    s) strata=$OPTARG ;;
    i) inputs=$OPTARG ;;
    t) thread_mix=$OPTARG ;;
    *) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
programs=("$@")
[ ${#programs[@]} -gt 0 ] ||
  programs=(python sqlite sqlite_insert git gcc redis thread_mix true ls tiny python_start)
[ -x /usr/bin/time ] || { echo "run.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

allocators=(glibc mimalloc mimalloc3 jemalloc tcmalloc tbbmalloc strata)
declare -A library=(
  [glibc]=$libdir/libc.so.6
  [mimalloc]=$libdir/libmimalloc.so.2
  [mimalloc3]=$root/build/mimalloc3/lib/libmimalloc.so.3
  [jemalloc]=$libdir/libjemalloc.so.2
  [tcmalloc]=$libdir/libtcmalloc_minimal.so.4
  [tbbmalloc]=$libdir/libtbbmalloc_proxy.so.2
  [strata]=$strata
)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# program_command PROGRAM: the command line that runs it (empty when unavailable).
program_command() {
  case "$1" in
    thread_mix) [ -x "$thread_mix" ] && echo "$thread_mix" ;;
    true) echo "/bin/true" ;;
    ls) echo "ls -l /usr/bin" ;;
    tiny) [ -x "$inputs/tiny/tiny" ] && echo "$inputs/tiny/tiny" ;;
    python_start) [ -x /usr/bin/python3 ] && echo "/usr/bin/python3 -c pass" ;;
    python | sqlite | sqlite_insert | git | gcc) echo "$here/workload.sh $1 $inputs" ;;
    redis) command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null &&
      echo "$here/workload.sh redis $inputs" ;;
    *) echo "run.sh: unknown program '$1'" >&2; exit 2 ;;
  esac
}

# is_available ALLOCATOR: whether its library exists.
is_available() {
  [ -f "${library[$1]}" ]
}

# measure PROGRAM ALLOCATOR RUN: one timed run; appends "seconds kib" to the samples
# (those the workload wrote to $WORKLOAD_SAMPLE where it did, else /usr/bin/time's) and
# records the digest of its output.
measure() {
  local program=$1 allocator=$2 run=$3 command
  command=$(program_command "$program")
  local base=$scratch/$program.$allocator
  rm -f "$base.sample"
  # shellcheck disable=SC2086
  if ! LD_PRELOAD=${library[$allocator]} WORKLOAD_SAMPLE=$base.sample \
    /usr/bin/time -f "%e %M" -o "$base.time" $command >"$base.out" 2>"$base.err"; then
    echo "failed" >>"$base.status"
    echo "run.sh: $program under $allocator failed (run $run):" >&2
    tail -n 5 "$base.err" >&2
    return
  fi
  if [ -s "$base.sample" ]; then
    cat "$base.sample" >>"$base.samples"
  else
    tail -n 1 "$base.time" >>"$base.samples"
  fi
  sha256sum <"$base.out" | cut -c1-16 >>"$base.digests"
}

# median COLUMN FILE: the median of one column of numbers.
median() {
  sort -g -k"$1,$1" "$2" | awk -v column="$1" '{ value[NR] = $column }
    END { if (NR % 2) print value[(NR + 1) / 2]; else print (value[NR / 2] + value[NR / 2 + 1]) / 2 }'
}

# cell PROGRAM ALLOCATOR: the table cell for one program under one allocator.
cell() {
  local program=$1 allocator=$2 base=$scratch/$1.$2
  if ! is_available "$allocator"; then echo "missing"; return; fi
  if [ -f "$base.status" ]; then echo "**failed**"; return; fi
  local seconds kib flag=""
  seconds=$(median 1 "$base.samples")
  kib=$(median 2 "$base.samples")
  if [ "$allocator" != glibc ] && [ -f "$scratch/$program.glibc.digests" ] &&
    ! cmp -s <(sort -u "$base.digests") <(sort -u "$scratch/$program.glibc.digests"); then
    flag=" **output differs**"
  fi
  awk -v s="$seconds" -v k="$kib" -v f="$flag" 'BEGIN {
    if (s < 1) printf "%.0f ms", s * 1000; else printf "%.2f s", s
    printf ", %.*f MiB%s\n", k < 10240 ? 2 : 1, k / 1024, f }'
}

echo "Generating inputs in $inputs ..." >&2
LD_PRELOAD= "$here/make_inputs.sh" "$inputs"
active=()
for program in "${programs[@]}"; do
  if [ -n "$(program_command "$program")" ]; then
    active+=("$program")
  else
    echo "run.sh: skipping $program (not built or not installed)" >&2
  fi
done

for run in $(seq 1 "$runs"); do
  for program in "${active[@]}"; do
    for allocator in "${allocators[@]}"; do
      is_available "$allocator" || continue
      echo "run $run/$runs: $program under $allocator" >&2
      measure "$program" "$allocator" "$run"
    done
  done
done

echo "Median of $runs runs: wall time, peak RSS. $(nproc) CPUs," \
  "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)."
echo
printf '| program |'
printf ' %s |' "${allocators[@]}"
printf '\n|---|'
printf -- '---|%.0s' "${allocators[@]}"
echo
for program in "${active[@]}"; do
  printf '| %s |' "$program"
  for allocator in "${allocators[@]}"; do printf ' %s |' "$(cell "$program" "$allocator")"; done
  echo
done
