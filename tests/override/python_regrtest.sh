#!/usr/bin/env bash
# CPython's own regression tests, run under glibc and under the preloaded allocator;
# the verdict of every single test must be the same.
#
# Usage: python_regrtest.sh PRELOAD
# Uses $OVERRIDE_TEST_PYTHON, else /usr/bin/python3, else python3 on PATH, whichever first has
# its test package (Debian: libpython3.11-testsuite); exits 77 (skip) when none has.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

modules=(test_dict test_list test_set test_json test_re test_unicode test_collections
  test_deque test_heapq test_sort test_struct test_array test_gc test_functools
  test_ordered_dict test_tuple test_string test_memoryview)

if [ "${1:-}" = --run ]; then
  # The comparison run: one line per test, "name (class) ... verdict", sorted, and
  # the summary line without its timing.
  python=$2
  status=0
  "$python" -m unittest -v "${modules[@]/#/test.}" >"$3" 2>&1 || status=$?
  grep -E ' \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)' "$3" | sort
  sed -n 's/^\(Ran [0-9]* tests\) in .*/\1/p' "$3"
  exit "$status"
fi

# has_test_modules PYTHON: whether that interpreter can import the selected tests.
has_test_modules() {
  "$1" -c "import test.${modules[0]}, test.${modules[-1]}" >/dev/null 2>&1
}

candidates=("${OVERRIDE_TEST_PYTHON:-}" /usr/bin/python3)
if command -v python3 >/dev/null; then
  candidates+=("$(python3 -c 'import sys; print(sys.executable)')")
fi
for python in "${candidates[@]}"; do
  if [ -n "$python" ] && [ -x "$python" ] && has_test_modules "$python"; then
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    echo "CPython regression tests with $python ($("$python" --version))"
    "$here/compare_with_glibc.sh" "$1" "$here/python_regrtest.sh" --run "$python" "$log"
    exit
  fi
done
echo "SKIP: no python3 with its test package (Debian: apt-get install libpython3.11-testsuite)"
exit 77
