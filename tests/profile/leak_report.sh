#!/usr/bin/env bash
# The heap profiler through the override and operator new, and strata-prof:
# a planted leak in a service loop is the largest stack of the leak report and
# of strata-prof's top stacks, the dump signal writes the profile, the flame
# graph is written, and a truncated or corrupted profile is one line and exit 2.
# Usage: leak_report.sh PRELOAD PROGRAM STRATA-PROF
set -euo pipefail
preload=$1 program=$2 tool=$3
[ -f "$preload" ] || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

STRATA_PROFILE="$work/heap" STRATA_PROFILE_LEAKS=1 STRATA_PROFILE_RATE=64K \
  STRATA_PROFILE_SIGNAL=10 STRATA_PROFILE_SEED=7 LD_PRELOAD="$preload" \
  "$program" >"$work/out" 2>"$work/report"
grep -q "profile written after the signal" "$work/out" || fail "no profile after the signal: $(cat "$work/out")"
# The first stack after the report's heading: its first frame with a symbol.
first=$(grep -m1 -A3 "blocks allocated at:" "$work/report" | grep -o "remember_session" | head -1)
[ "$first" = remember_session ] || fail "leak not at the top: $(head -8 "$work/report")"
[ -s "$work/heap.folded" ] || fail "no folded stacks"

"$tool" "$work/heap" --top 3 --svg "$work/flame.svg" >"$work/top"
sed -n 2,4p "$work/top" | grep -q remember_session || fail "strata-prof's top stack: $(head -6 "$work/top")"
grep -q "<svg" "$work/flame.svg" && grep -q remember_session "$work/flame.svg" || fail "flame graph"
"$tool" "$work/heap" --sample alloc_space >/dev/null || fail "alloc_space"

# Damaged profiles: one line on stderr, exit status 2.
size=$(stat -c %s "$work/heap")
head -c $((size / 2)) "$work/heap" >"$work/truncated"
printf '\x0a\xff\xff\xff\xff\x0f' | cat - "$work/heap" >"$work/corrupted"
for damaged in truncated corrupted; do
  status=0
  "$tool" "$work/$damaged" >"$work/stdout" 2>"$work/stderr" || status=$?
  [ "$status" = 2 ] || fail "$damaged: exit status $status"
  [ "$(wc -l <"$work/stderr")" = 1 ] && grep -q "not a valid profile" "$work/stderr" ||
    fail "$damaged: $(cat "$work/stderr")"
done
echo "ok"
