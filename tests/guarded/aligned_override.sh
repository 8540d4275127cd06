#!/usr/bin/env bash
# Aligned requests through the override are sampled: posix_memalign,
# aligned_alloc, memalign and aligned operator new each give a guarded block at
# its alignment, and a write one byte past it is reported and kills the program
# with SIGSEGV.
# Usage: aligned_override.sh PRELOAD PROGRAM
set -uo pipefail
preload=$1 program=$2
[ -f "$preload" ] || exit 77
for entry in posix_memalign aligned_alloc memalign new_aligned; do
  report=$(STRATA_GUARDED_SAMPLE_RATE=1 STRATA_GUARDED_MAX_COST=0 STRATA_GUARDED_UNDERFLOW_PERCENT=0 LD_PRELOAD="$preload" \
    "$program" "$entry" 2>&1)
  status=$?
  [ "$status" = $((128 + 11)) ] || { echo "FAIL: $entry: exit status $status: $report"; exit 1; }
  grep -q "caught a buffer overflow (write)" <<<"$report" &&
    grep -q "block of 64 bytes at 0x[0-9a-f]*, 0 bytes past its end" <<<"$report" ||
    { echo "FAIL: $entry: $report"; exit 1; }
done
echo ok
