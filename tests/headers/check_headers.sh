#!/usr/bin/env bash
# Every public header compiles alone and with every other: for each compiler
# given, one translation unit per header and one that includes them all, as
# C++20 with -Wall -Wextra -Werror; strata.h also as C11 with each C compiler.
# A user's program includes any mix of them, so none may lean on another
# being included first, and none may warn.
#
# Usage: check_headers.sh INCLUDE_DIR [--cxx COMPILER]... [--c COMPILER]...
set -euo pipefail
include_dir=$1
shift
cxx_compilers=()
c_compilers=()
while [ $# -gt 0 ]; do
  case $1 in
    --cxx) cxx_compilers+=("$2") ;;
    --c) c_compilers+=("$2") ;;
    *) echo "usage: $0 INCLUDE_DIR [--cxx COMPILER]... [--c COMPILER]..." >&2; exit 2 ;;
  esac
  shift 2
done

headers=()
while IFS= read -r header; do headers+=("${header#"$include_dir"/}"); done < <(
  find "$include_dir/strata" -name '*.h' -o -name '*.hpp' | LC_ALL=C sort)
[ ${#headers[@]} -gt 0 ] || { echo "no headers under $include_dir/strata" >&2; exit 1; }

failures=0
# compile LANGUAGE COMPILER FLAGS NAME SOURCE: compile SOURCE (text) and report.
compile() {
  local language=$1 compiler=$2 flags=$3 name=$4 source=$5
  # shellcheck disable=SC2086
  if ! output=$(printf '%s' "$source" | "$compiler" -x "$language" $flags -Wall -Wextra -Werror \
      -I"$include_dir" -c -o /dev/null - 2>&1); then
    echo "FAIL: $name with $compiler:"
    echo "$output" | head -n 20
    failures=$((failures + 1))
  fi
}

all=""
for header in "${headers[@]}"; do all+="#include <$header>"$'\n'; done
for compiler in "${cxx_compilers[@]}"; do
  for header in "${headers[@]}"; do
    compile c++ "$compiler" -std=c++20 "$header" "#include <$header>"$'\n'
  done
  compile c++ "$compiler" -std=c++20 "all headers" "$all"
done
for compiler in "${c_compilers[@]}"; do
  compile c "$compiler" -std=c11 "strata/strata.h" $'#include <strata/strata.h>\n'
done

count=$(( (${#headers[@]} + 1) * ${#cxx_compilers[@]} + ${#c_compilers[@]} ))
echo "$((count - failures)) of $count header checks compiled (${#headers[@]} headers;" \
  "C++: ${cxx_compilers[*]}; C: ${c_compilers[*]})"
[ "$failures" -eq 0 ]
