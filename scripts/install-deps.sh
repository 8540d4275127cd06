#!/usr/bin/env bash
# Install the Debian 12 packages strata needs, or name them and fail when not root.
# Usage: scripts/install-deps.sh build|test|bench
set -euo pipefail

# build: the library, the override, strata-replay, strata-bench (a compiler, CMake, Ninja).
build_pkgs=(cmake ninja-build g++)
# test: scripts/test.sh and .ci/run: the suites, the micro-benchmarks the release run
# builds, the fuzzers, the programs the tests run, the consumers of an install.
test_pkgs=(libgtest-dev libbenchmark-dev clang libclang-rt-14-dev clang-format python3
           python3-matplotlib pkg-config valgrind sqlite3 git gcc time libpython3.11-testsuite)
# bench: scripts/bench.sh's report and the allocators it compares.
bench_pkgs=(python3 python3-matplotlib libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libtbbmalloc2)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  test) want+=("${test_pkgs[@]}") ;;
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
