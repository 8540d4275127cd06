#!/usr/bin/env bash
# Everything a user does with an install, from the install alone (PREFIX holds
# it; no build or source tree is used but this folder's sources):
#   - a CMake project links every exported target (tests/consumer/CMakeLists.txt)
#     and runs its programs, which check that each target links and works;
#   - pkg-config: strata.pc's prefix is PREFIX, and a C and a C++ program build
#     with its flags alone;
#   - the static override makes malloc strata's in a C++ program that calls none;
#   - the installed strata-replay replays a trace with the installed override;
#   - where it has the CUDA half, strata_gpu.py finds the installed library.
#
# Usage: check_install.sh PREFIX
set -euo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
unset LD_PRELOAD LD_LIBRARY_PATH PKG_CONFIG_PATH
# quietly COMMAND...: run it, showing its output only when it fails.
quietly() {
  if ! "$@" >"$scratch/output" 2>&1; then
    cat "$scratch/output" >&2
    return 1
  fi
}

echo "-- CMake: find_package(strata) and every target"
quietly cmake -S "$here" -B "$scratch/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
quietly cmake --build "$scratch/cmake"
for program in consumer consumer_allocators consumer_allocators_static consumer_malloc \
  consumer_malloc_static consumer_gpu; do
  "$scratch/cmake/$program"
done

echo "-- pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pc_prefix=$(cd "$(pkg-config --variable=prefix strata)" && pwd)
if [ "$pc_prefix" != "$prefix" ]; then
  echo "FAIL: strata.pc's prefix is $pc_prefix, not $prefix" >&2
  exit 1
fi
libdir=$(pkg-config --variable=libdir strata)
# shellcheck disable=SC2046
cc "$here/main.c" $(pkg-config --cflags --libs strata) -Wl,-rpath,"$libdir" -o "$scratch/pc_c"
"$scratch/pc_c"
# shellcheck disable=SC2046
c++ -std=c++20 "$here/allocators.cpp" $(pkg-config --cflags --libs strata) -Wl,-rpath,"$libdir" \
  -o "$scratch/pc_cxx"
"$scratch/pc_cxx"

echo "-- the static override, linked by hand"
c++ -std=c++20 "$here/malloc_is_strata.cpp" -I"$prefix/include" -Wl,-u,malloc \
  "$prefix/lib/libstrata-malloc-static.a" -o "$scratch/static_by_hand"
"$scratch/static_by_hand"

echo "-- the installed strata-replay"
STRATA_TRACE=$scratch/ls.trace LD_PRELOAD=$prefix/lib/libstrata-malloc.so ls -R "$prefix" >/dev/null
"$prefix/bin/strata-replay" "$scratch/ls.trace" --allocators strata,glibc --runs 1 >"$scratch/replay"
cat "$scratch/replay"
if ! grep -qF "strata: $prefix/lib/libstrata-malloc.so" "$scratch/replay"; then
  echo "FAIL: strata-replay did not preload the installed override" >&2
  exit 1
fi

# Where the install has the CUDA half: strata_gpu.py finds the installed library
# and the PyTorch extension's source and header by itself, and without a GPU the
# library answers ENODEV.
if [ -e "$prefix/lib/libstrata-gpu-alloc.so" ]; then
  echo "-- the GPU allocator library and strata_gpu.py"
  PYTHONPATH=$prefix/share/strata/python python3 - "$prefix" <<'PYTHON'
import errno, os, sys
import strata_gpu
prefix = sys.argv[1]
assert strata_gpu.library_path() == os.path.join(prefix, "lib", "libstrata-gpu-alloc.so"), \
    strata_gpu.library_path()
assert os.path.exists(strata_gpu.TORCH_EXTENSION_SOURCE), strata_gpu.TORCH_EXTENSION_SOURCE
assert os.path.exists(os.path.join(strata_gpu.INCLUDE_DIR, "strata", "gpu", "integration.h"))
try:
    strata_gpu.empty_cache(0)
    print("a GPU answered: strata_gpu.empty_cache(0) worked")
except OSError as error:
    assert error.errno == errno.ENODEV, error
    print("no GPU here: strata_gpu.empty_cache(0) answered ENODEV, as promised")
PYTHON
fi
echo "PASS: the install works from the install alone"
