#!/usr/bin/env bash
# STRATA_TRACE under the strata override: every call of trace_calls recorded, in
# one file (a forked child records nothing), then with "%p" in one file per process.
#
# Usage: trace_record.sh LIBRARY TRACE_CALLS
# Exits 77 (CTest skip) while the library is not built.
set -euo pipefail
library=$1
program=$2
if [ ! -f "$library" ]; then
  echo "SKIP: $library not built" >&2
  exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

STRATA_TRACE=$scratch/one.trace LD_PRELOAD=$library "$program" run
"$program" check "$scratch/one.trace"

mkdir "$scratch/split"
STRATA_TRACE=$scratch/split/trace.%p LD_PRELOAD=$library "$program" run
"$program" check-split "$scratch/split"
echo "PASS: every call recorded, fork handled both ways"
