#!/usr/bin/env bash
# Debug mode under memcheck: with STRATA_DEBUG=1 the preloaded heap tells
# Valgrind about its blocks, so memcheck reports the planted leak and the
# planted use after free of valgrind_target.c. Skipped (77) without valgrind.
# Usage: valgrind_debug.sh PRELOAD PROGRAM
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/preload.sh"
library=$(preload_resolve "$1")
program=$2
case "$(basename "$library")" in
  libstrata-malloc*) ;;
  *) echo "SKIP: only strata's heap speaks to memcheck"; exit 77 ;;
esac
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# nouserintercepts: memcheck replaces only the C library's malloc, so the
# program's calls reach the preloaded heap and only its client requests tell memcheck.
STRATA_DEBUG=1 timeout 120 valgrind --tool=memcheck --leak-check=full --trace-children=yes \
  --soname-synonyms=somalloc=nouserintercepts --log-file="$log" \
  env LD_PRELOAD="$library" "$program" >/dev/null
grep -q "Invalid read of size 1" "$log" || { cat "$log"; echo "FAIL: no use after free reported"; exit 1; }
grep -q "4,000 bytes in 1 blocks are definitely lost" "$log" ||
  { cat "$log"; echo "FAIL: no leak reported"; exit 1; }
echo "memcheck reported the use after free and the leak"
