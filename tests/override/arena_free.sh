#!/usr/bin/env bash
# free() of a block of a monotonic_arena, a frame allocator and a session heap
# under the malloc override: each aborts with the heap's one line, which says
# the pointer lies in a strata arena's chunk.
#
# Usage: arena_free.sh LIBRARY PROGRAM
set -uo pipefail
library=$1 program=$2
[ -f "$library" ] || { echo "SKIP: $library not built" >&2; exit 77; }
failures=0
for kind in arena frame session; do
  err=$(LD_PRELOAD=$library "$program" "$kind" 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne 134 ] || ! grep -q "points into a chunk of a strata arena" <<<"$err"; then
    echo "FAIL: $kind: status $status, stderr: $err" >&2
    failures=$((failures + 1))
  else
    echo "ok: $kind: $err"
  fi
done
exit "$failures"
