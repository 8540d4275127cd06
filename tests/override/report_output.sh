#!/usr/bin/env bash
# Where the override writes its reports: statistics at exit reach stderr even
# from a program that closes its stderr before exit (ls, as coreutils do), and
# reach STRATA_STATS_FILE when that is set; a bad value warns naming what is
# accepted; variables that strata's own tools read are not called unknown.
#
# Usage: report_output.sh LIBRARY
set -uo pipefail
[ -f "$1" ] || { echo "SKIP: $1 not built" >&2; exit 77; }
library=$(readlink -f "$1")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
# expect NAME FILE PATTERN: FILE contains PATTERN.
expect() {
  if grep -qF -- "$3" "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no '$3' in: $(cat "$2")" >&2
    failures=$((failures + 1))
  fi
}

STRATA_SHOW_STATS=1 LD_PRELOAD=$library ls / >/dev/null 2>"$scratch/ls.err"
expect "statistics of ls, which closes stderr" "$scratch/ls.err" "strata statistics"

STRATA_STATS_FILE=$scratch/stats LD_PRELOAD=$library ls / >/dev/null 2>&1
expect "statistics in STRATA_STATS_FILE" "$scratch/stats" "strata statistics"

STRATA_SECURE=2 STRATA_PURGE_DELAY_MS=-7 LD_PRELOAD=$library /bin/true 2>"$scratch/bad.err"
expect "a bad boolean" "$scratch/bad.err" \
  "strata: warning: STRATA_SECURE=2: not a boolean (0/1, true/false, yes/no, on/off); using the default, 0"
expect "a number out of range" "$scratch/bad.err" \
  "strata: warning: STRATA_PURGE_DELAY_MS=-7: not a number from -1 to 86400000"

# Beside them one unknown name, whose warning shows that the override read them all.
STRATA_REPLAY_PYTHON=python3 STRATA_GPU_ALLOC_LIBRARY=/x.so STRATA_FUZZ_SECONDS=1 \
  STRATA_TRACKING=0 STRATA_OVERRIDE_PRELOAD=glibc STRATA_CPU_BACKEND=libc STRATA_NO_SUCH=1 \
  LD_PRELOAD=$library /bin/true 2>"$scratch/tools.err"
unknown="strata: warning: STRATA_NO_SUCH=1: not a strata variable"
if [ "$(wc -l <"$scratch/tools.err")" -ne 1 ] || ! grep -qF "$unknown" "$scratch/tools.err"; then
  echo "FAIL: want only '$unknown...', got: $(cat "$scratch/tools.err")" >&2
  failures=$((failures + 1))
else
  echo "ok: variables of strata's tools pass silently"
fi
exit "$failures"
