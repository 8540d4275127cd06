#!/usr/bin/env bash
# Build the GPU targets (strata_gpu, strata_gpu_cuda, libstrata-gpu-alloc.so and
# the emulated CUDA runtime the tests run the backend on)
# against CUDA 12, the version most PyTorch and CuPy wheels link, in a tree of
# their own, and fail unless CUDA 12 is really what they were built with: the
# system's CUDA 13 sits on the compiler's and linker's default paths
# (/usr/local/include, /usr/local/lib), so a slip would build quietly against it.
# The toolkit comes from PyPI (scripts/install-deps.sh cuda12).
# Usage: scripts/build-gpu-cuda12.sh [BUILD_DIR]   (default build/cuda12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
root=$(scripts/install-deps.sh cuda12)
tree=${1:-build/cuda12}

fail() {
  echo "strata: CUDA 12 build: $*" >&2
  exit 1
}

# Nothing in the environment may point at the system's toolkit: nvcc's folder on
# PATH, CUDA_PATH (FindCUDAToolkit searches it), CPATH and the like (they come
# before the -isystem folder), LIBRARY_PATH (set to CUDA 13's stubs here).
path=$(tr ':' '\n' <<<"$PATH" | grep -v -E '/cuda[^/]*/bin/?$' | paste -sd: -)
clean_env=(env -u CUDA_PATH -u CUDA_HOME -u CUDAToolkit_ROOT -u CUDACXX -u CPATH
           -u C_INCLUDE_PATH -u CPLUS_INCLUDE_PATH -u LIBRARY_PATH PATH="$path")

# --fresh: a cache from another toolkit root would keep its CUDA_CUDART and the like.
configure_log=$("${clean_env[@]}" cmake --fresh -S . -B "$tree" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$root" \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF) || {
  echo "$configure_log"
  fail "configure failed"
}
grep '^-- strata: GPU' <<<"$configure_log" || true
grep -q '^-- strata: GPU device layer with the CUDA backend (CUDA 12\.' <<<"$configure_log" ||
  fail "configure did not pick CUDA 12 from $root"
cache() { sed -n "s/^$1:[A-Z]*=//p" "$tree/CMakeCache.txt"; }
[ "$(cache CUDA_cudart_LIBRARY)" = "$root/lib64/libcudart.so" ] ||
  fail "libcudart is $(cache CUDA_cudart_LIBRARY), not $root/lib64/libcudart.so"
# The compile and link lines: the root's headers, and no path into the system's
# CUDA 13 (its libraries are in /usr/local/lib64, and FindCUDAToolkit finds
# cuBLAS and the like there, which nothing here may link).
commands=$(ninja -C "$tree" -t commands strata_gpu_alloc)
grep -q -- "-isystem $root/include " <<<"$commands" || fail "no -isystem $root/include"
if grep -o -E '[^ ]*/usr/local/[^ ]*' <<<"$commands"; then
  fail "the build lines above name the system's CUDA"
fi

"${clean_env[@]}" cmake --build "$tree" -j "$(nproc)" \
  --target strata_gpu strata_gpu_cuda strata_gpu_alloc strata_gpu_emulated_runtime strata_gpu_cuda_emulated

# Every header the compiler read: CUDA's from the root, none from the system's
# CUDA 13 in /usr/local/include, where a header the root lacked would come from.
deps=$(ninja -C "$tree" -t deps)
if grep -E '^ +/usr/local/' <<<"$deps"; then
  fail "the headers above are the system's, not CUDA 12's"
fi
grep -q "^ *$root/include/cuda_runtime_api.h$" <<<"$deps" ||
  fail "no object read $root/include/cuda_runtime_api.h"
lib=$tree/gpu/integration/libstrata-gpu-alloc.so
dynamic=$(readelf -d "$lib")
grep -q 'NEEDED.*\[libcudart\.so\.12\]' <<<"$dynamic" || fail "$lib does not link libcudart.so.12"
loaded=$(ldd "$lib")
grep -q "libcudart\.so\.12 => $root/lib64/" <<<"$loaded" ||
  fail "$lib does not load libcudart.so.12 from $root/lib64"
if grep /usr/local/ <<<"$loaded"; then
  fail "$lib loads the above from the system's CUDA"
fi
echo "strata: GPU targets built against CUDA 12 ($root) in $tree"
