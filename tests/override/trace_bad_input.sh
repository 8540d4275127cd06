#!/usr/bin/env bash
# strata-replay on truncated and corrupt traces: each is refused (exit 2) with a
# message naming the byte offset of the problem; a free of a block the trace
# never allocated is counted and reported, and the replay goes on. A trace with
# no calls, an allocator it does not know and a run count below one are refused
# (exit 2) with a message too.
#
# Usage: trace_bad_input.sh STRATA_REPLAY
set -euo pipefail
replay=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# le VALUE BYTES: VALUE as BYTES little-endian bytes, as printf escapes.
le() {
  local value=$1 bytes=$2 i out=""
  for ((i = 0; i < bytes; i++)); do out+=$(printf '\\x%02x' $(((value >> (8 * i)) & 255))); done
  printf '%s' "$out"
}

# header VERSION: the 16-byte file header.
header() { printf "STRTRC01$(le "$1" 4)$(le 0 4)"; }

# record TIME ADDRESS SIZE OLD THREAD OP: one 40-byte record.
record() {
  printf "$(le "$1" 8)$(le "$2" 8)$(le "$3" 8)$(le "$4" 8)$(le "$5" 4)$(le "$6" 1)$(le 0 1)$(le 0 2)"
}

failures=0
# refused_with NAME EXPECTED ARGS...: the replay of NAME with ARGS exits 2 and says EXPECTED.
refused_with() {
  local name=$1 expected=$2 status=0
  shift 2
  "$replay" "$scratch/$name" "$@" >"$scratch/out" 2>"$scratch/err" || status=$?
  if [ "$status" -ne 2 ] || ! grep -qF -- "$expected" "$scratch/err"; then
    echo "FAIL: $name $*: status $status, stderr: $(cat "$scratch/err") (want: $expected)" >&2
    failures=$((failures + 1))
  else
    echo "ok: $name $*: $(cat "$scratch/err")"
  fi
}
# refused NAME EXPECTED: the replay of NAME against glibc exits 2 and says EXPECTED.
refused() { refused_with "$1" "$2" --allocators glibc --runs 1; }

: >"$scratch/empty"
refused empty "truncated header (0 of 16 bytes) at byte offset 0"
header 1 | head -c 10 >"$scratch/short-header"
refused short-header "truncated header (10 of 16 bytes) at byte offset 10"
{ printf 'NOTATRACE0000000'; record 1 4096 16 0 1 1; } >"$scratch/bad-magic"
refused bad-magic "bad magic (not a strata trace) at byte offset 0"
{ header 2; record 1 4096 16 0 1 1; } >"$scratch/bad-version"
refused bad-version "unsupported version 2 at byte offset 8"
{ header 1; record 1 4096 16 0 1 1; record 2 4096 0 0 1 2; } >"$scratch/whole"
head -c 76 "$scratch/whole" >"$scratch/truncated"
refused truncated "truncated record 1 (20 of 40 bytes) at byte offset 56"
{ header 1; record 1 4096 16 0 1 1; record 2 4096 0 0 1 9; } >"$scratch/unknown-op"
refused unknown-op "record 1: unknown op 9 at byte offset 92"

# The header alone: what a wrapper script that execs the traced program leaves.
header 1 >"$scratch/no-calls"
refused no-calls "holds no calls"
refused_with whole "unknown allocator 'foo'" --allocators foo
refused_with whole "unknown allocator 'nosuch'" --allocators glibc,nosuch
refused_with whole "--allocators needs at least one name" --allocators ,
refused_with whole "--runs takes a whole number from 1 to 1000, not '0'" --runs 0
refused_with whole "--runs takes a whole number from 1 to 1000, not 'x'" --runs x

# A free of an address never allocated: counted, reported, not fatal.
{ header 1; record 1 4096 16 0 1 1; record 2 8192 0 0 1 2; record 3 4096 0 0 1 2; } >"$scratch/foreign"
if "$replay" "$scratch/foreign" --allocators glibc --runs 1 >"$scratch/out" 2>&1 &&
  grep -q "not replayed: 1 frees/reallocs of blocks allocated before the trace began" "$scratch/out"; then
  echo "ok: foreign free counted"
else
  echo "FAIL: foreign free: $(cat "$scratch/out")" >&2
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "PASS: every bad trace and bad option refused with its reason"
exit "$failures"
