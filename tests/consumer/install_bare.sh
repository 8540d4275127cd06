#!/usr/bin/env bash
# The README's install commands (its `<!-- check: ci install -->` block), run as
# a newcomer runs them on a machine with only a compiler, CMake and Ninja: in a
# copy of SOURCE's working tree, inside a private mount namespace where the
# competitors' headers, GoogleTest, Google Benchmark and the CUDA toolkit are
# hidden. Each optional part must say, in one configure line, that it is left
# out. The install lands in SCRATCH/home/.local (HOME is SCRATCH/home); nothing
# outside SCRATCH changes. Needs root (unshare -m).
#
# Usage: install_bare.sh SOURCE SCRATCH
set -euo pipefail
source=$(cd "$1" && pwd)
scratch=$(mkdir -p "$2" && cd "$2" && pwd)

if [ -z "${INSTALL_BARE_NAMESPACE:-}" ]; then
  rm -rf "$scratch/strata" "$scratch/home"
  mkdir -p "$scratch/strata" "$scratch/home"
  git -C "$source" ls-files -co --exclude-standard -z | (cd "$source" && tar -c --null -T -) |
    tar -x -C "$scratch/strata"
  python3 "$source/tests/docs/code_blocks.py" show install "$source/README.md" >"$scratch/install.sh"
  exec unshare -m env INSTALL_BARE_NAMESPACE=1 "$0" "$@"
fi

mount --make-rprivate /
arch_lib=/usr/lib/$(gcc -print-multiarch)
# hide PATH: an empty folder over PATH, where it exists.
hide() { if [ -e "$1" ]; then mount -t tmpfs -o size=64k,mode=755 strata-hidden "$1"; fi; }
# without DIR NAME...: DIR becomes a folder of links to everything in it but
# the NAMEs (patterns), reached through a second mount of it: for files, which
# no mount can take away.
without() {
  local dir=$1 keep=$scratch/mounts/$1 links=$scratch/links/$1 entry name pattern
  shift
  mkdir -p "$keep" "$links"
  mount --bind "$dir" "$keep"
  for entry in "$keep"/*; do
    name=${entry##*/}
    for pattern in "$@"; do
      # shellcheck disable=SC2053
      [[ $name == $pattern ]] && continue 2
    done
    ln -s "$entry" "$links/$name"
  done
  mount --bind "$links" "$dir"
}
for path in "$arch_lib"/cmake/{GTest,benchmark,mimalloc,TBB} /usr/local/cuda /usr/local/cuda-*; do
  hide "$path"
done
without /usr/include 'mimalloc*.h' jemalloc gperftools google tbb oneapi gtest gmock benchmark
# CUDA's wrapper scripts on the PATH.
without /usr/local/bin nvcc nvlink ptxas fatbinary cudafe++ bin2c __nvcc_device_query

for hidden in /usr/include/mimalloc.h /usr/include/jemalloc/jemalloc.h \
  /usr/include/gperftools/tcmalloc.h /usr/include/tbb/tbb.h /usr/include/gtest/gtest.h \
  /usr/include/benchmark/benchmark.h "$arch_lib/cmake/GTest/GTestConfig.cmake" \
  "$arch_lib/cmake/benchmark/benchmarkConfig.cmake" /usr/local/cuda/bin/nvcc; do
  [ ! -e "$hidden" ] || { echo "FAIL: $hidden is still visible" >&2; exit 1; }
done
! command -v nvcc >/dev/null || { echo "FAIL: nvcc is still on the PATH" >&2; exit 1; }
echo "hidden: competitors' headers, GoogleTest, Google Benchmark, the CUDA toolkit"

cd "$scratch/strata"
HOME=$scratch/home bash -e -o pipefail "$scratch/install.sh" | tee "$scratch/install.log"
for line in "strata: tests skipped: GoogleTest not found" \
  "strata: micro-benchmarks skipped: Google Benchmark not found" \
  "strata: GPU device layer without the CUDA backend"; do
  grep -qF "$line" "$scratch/install.log" || { echo "FAIL: no '$line' at configure" >&2; exit 1; }
done
echo "PASS: the README's install ran with only a compiler, CMake and Ninja"
