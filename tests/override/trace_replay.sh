#!/usr/bin/env bash
# A trace of a real program (sqlite3 running bench/programs/sqlite_workload.sql),
# recorded under the strata override and replayed by strata-replay against strata
# and glibc: each replay reaches the peak live bytes trace_peak computes from the
# trace on its own, and no call of the trace fails.
#
# Usage: trace_replay.sh LIBRARY STRATA_REPLAY TRACE_PEAK SQL_WORKLOAD
# Exits 77 (CTest skip) while the library is not built or sqlite3 is missing.
set -euo pipefail
library=$1
replay=$2
peak_tool=$3
workload=$4
if [ ! -f "$library" ]; then
  echo "SKIP: $library not built" >&2
  exit 77
fi
if ! command -v sqlite3 >/dev/null; then
  echo "SKIP: no sqlite3" >&2
  exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

STRATA_TRACE=$scratch/sqlite.trace LD_PRELOAD=$library sqlite3 "$scratch/db" <"$workload" >/dev/null
expected=$("$peak_tool" "$scratch/sqlite.trace")
"$replay" "$scratch/sqlite.trace" --allocators strata,glibc --runs 1 --json "$scratch/out.json"
echo "trace_peak: $expected bytes"

grep -q "\"trace_peak_live_bytes\": $expected," "$scratch/out.json" || {
  echo "FAIL: strata-replay's peak live from the trace differs from $expected" >&2
  exit 1
}
for allocator in strata glibc; do
  line=$(grep "\"name\": \"$allocator\"" "$scratch/out.json") || {
    echo "FAIL: no $allocator replay" >&2
    exit 1
  }
  case "$line" in
    *"\"peak_live_bytes\": $expected,"*"\"failures\": 0}"*) ;;
    *)
      echo "FAIL: the $allocator replay: $line (want peak live $expected, no failures)" >&2
      exit 1
      ;;
  esac
done
echo "PASS: both replays reached the recorded peak of $expected live bytes"
