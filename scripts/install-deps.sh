#!/usr/bin/env bash
# Install the Debian 12 packages strata needs, or name them and fail when not root.
# Usage: scripts/install-deps.sh build|test|bench
set -euo pipefail

build_pkgs=(cmake ninja-build g++ pkg-config libgtest-dev libbenchmark-dev)
test_pkgs=(clang-format python3 sqlite3 git gcc time libpython3.11-testsuite clang
           libclang-rt-14-dev)
bench_pkgs=(libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev libtbb-dev python3-matplotlib
            valgrind time redis-server redis-tools)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  # The test run builds the benchmarks too (their micro-benchmarks include mimalloc.h)
  # and smoke-tests strata-bench against the competitors.
  test) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  bench) want+=("${bench_pkgs[@]}") ;;
  *) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac

missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  echo "strata: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "strata: missing Debian packages: ${missing[*]}" >&2
  echo "strata: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
