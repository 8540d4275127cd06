#!/usr/bin/env bash
# Install the Debian 12 packages strata needs, or name them and fail when not root.
# Usage: scripts/install-deps.sh build|test|bench
#        scripts/install-deps.sh mimalloc3 [DIR] (prints the folder of libmimalloc.so.3)
#        scripts/install-deps.sh cuda12 [DIR]   (prints the CUDA 12 toolkit root)
set -euo pipefail

# build: the library, the override, strata-replay, strata-bench (a compiler, CMake, Ninja).
build_pkgs=(cmake ninja-build g++)
# test: scripts/test.sh and .ci/run: the suites, the micro-benchmarks the release run
# builds, the fuzzers, the programs the tests run, the consumers of an install.
test_pkgs=(libgtest-dev libbenchmark-dev clang libclang-rt-14-dev clang-format python3
           python3-matplotlib pkg-config valgrind sqlite3 git gcc time libpython3.11-testsuite)
# bench: scripts/bench.sh's report and the allocators it compares.
bench_pkgs=(python3 python3-matplotlib libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libtbbmalloc2)

# mimalloc3: mimalloc 3, the competitor beside Debian's 2.0.9 (libmimalloc2.0), which
# Debian 12 does not package. PyPI's cmeel-mimalloc wheel ships libmimalloc.so.3; it goes
# into DIR, default build/mimalloc3, with pip --target, nothing system-wide, and
# DIR/lib/libmimalloc.so.3 is where strata-bench, bench/programs/run.sh,
# bench/callgrind/count.sh and pair_ab look for it. The bench mode installs it too.
mimalloc3_wheel=cmeel-mimalloc==3.4.3

install_mimalloc3() {
  local root=$1
  if [ "$(cat "$root/.strata-mimalloc3" 2>/dev/null)" = "$mimalloc3_wheel" ]; then
    echo "$root/lib"
    return
  fi
  echo "strata: $mimalloc3_wheel from PyPI into $root" >&2
  rm -rf "$root"
  mkdir -p "$root/lib"
  python3 -m pip install -q --no-deps --only-binary=:all: --no-compile \
    --root-user-action=ignore --target "$root/pip" "$mimalloc3_wheel" >&2
  # A relative link, so the folder can be moved.
  ln -s ../pip/cmeel.prefix/lib/libmimalloc.so.3 "$root/lib/"
  local banner
  banner=$(env LD_PRELOAD="$root/lib/libmimalloc.so.3" MIMALLOC_VERBOSE=1 /bin/true 2>&1)
  if [[ $banner != *"v3."* ]]; then
    echo "strata: $root/lib/libmimalloc.so.3 does not load as mimalloc 3" >&2
    exit 1
  fi
  # Written last: an interrupted run leaves no stamp and is redone.
  echo "$mimalloc3_wheel" >"$root/.strata-mimalloc3"
  echo "$root/lib"
}

# cuda12: most PyTorch and CuPy wheels link CUDA 12 while the system has 13, so
# the GPU backend is also built against a CUDA 12 toolkit root (headers and
# libcudart; the CUDA 12 wheels carry no nvcc) assembled in DIR, default
# build/cuda12-toolkit, from NVIDIA's PyPI wheels: pip --target, nothing system-wide.
# These are the wheels of 12.9.1, the last CUDA 12 release; CCCL's too, so that
# cuda/, cub/ and thrust/ never fall through to the system's 13 in /usr/local/include.
cuda12_release=12.9.1
cuda12_wheels=(nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.86
               nvidia-cuda-cccl-cu12==12.9.27)

install_cuda12() {
  local root=$1 stamp="${cuda12_wheels[*]}"
  if [ "$(cat "$root/.strata-cuda12" 2>/dev/null)" = "$stamp" ]; then
    echo "$root"
    return
  fi
  echo "strata: CUDA $cuda12_release from PyPI into $root" >&2
  rm -rf "$root"
  mkdir -p "$root"/{include,lib64,bin}
  python3 -m pip install -q --no-deps --only-binary=:all: --no-compile \
    --root-user-action=ignore --target "$root/pip" "${cuda12_wheels[@]}" >&2
  # Relative links from here on, so the root can be moved. One include/ as a
  # toolkit has it: cuda_runtime.h includes crt/host_config.h, which only the
  # nvcc wheel ships. ln fails on a name two wheels share.
  local nv=../pip/nvidia entry
  for entry in "$root"/pip/nvidia/cuda_{runtime,nvcc,cccl}/include/*; do
    case $entry in */__init__.py) continue ;; esac
    ln -s "$nv/${entry#"$root/pip/nvidia/"}" "$root/include/"
  done
  for entry in libcudart.so.12 libcudart_static.a libcudadevrt.a libculibos.a; do
    ln -s "$nv/cuda_runtime/lib/$entry" "$root/lib64/"
  done
  # The wheel has only the soname; find_library looks for the link name.
  ln -s libcudart.so.12 "$root/lib64/libcudart.so"
  ln -s "$nv/cuda_nvcc/bin/ptxas" "$root/bin/"
  ln -s pip/nvidia/cuda_nvcc/nvvm "$root/nvvm"
  # Without nvcc, FindCUDAToolkit takes the root and the version from version.txt
  # (CMake 3.25), newer CMake from version.json.
  echo "CUDA Version $cuda12_release" >"$root/version.txt"
  printf '{ "cuda": { "name": "CUDA SDK", "version": "%s" } }\n' "$cuda12_release" >"$root/version.json"
  if ! grep -q '^#define CUDART_VERSION  *12' "$root/include/cuda_runtime_api.h"; then
    echo "strata: $root/include/cuda_runtime_api.h is not CUDA 12's" >&2
    exit 1
  fi
  # Written last: an interrupted run leaves no stamp and is redone.
  echo "$stamp" >"$root/.strata-cuda12"
  echo "$root"
}

mode=${1:-build}
want=("${build_pkgs[@]}")
case "$mode" in
  build) ;;
  test) want+=("${test_pkgs[@]}") ;;
  bench) want+=("${bench_pkgs[@]}") ;;
  mimalloc3 | cuda12)
    want=()
    python3 -m pip --version >/dev/null 2>&1 || want=(python3-pip) ;;
  *) echo "usage: $0 build|test|bench|mimalloc3 [DIR]|cuda12 [DIR]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "strata: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "strata: missing Debian packages: ${missing[*]}" >&2
    echo "strata: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ "$mode" = mimalloc3 ] || [ "$mode" = bench ]; then
  root=$repo/build/mimalloc3
  [ "$mode" = mimalloc3 ] && root=${2:-$root}
  mkdir -p "$(dirname "$root")"
  lib=$(install_mimalloc3 "$(cd "$(dirname "$root")" && pwd)/$(basename "$root")")
  [ "$mode" = mimalloc3 ] && echo "$lib"
fi

if [ "$mode" = cuda12 ]; then
  root=${2:-$repo/build/cuda12-toolkit}
  mkdir -p "$(dirname "$root")"
  install_cuda12 "$(cd "$(dirname "$root")" && pwd)/$(basename "$root")"
fi
