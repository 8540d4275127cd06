#!/usr/bin/env bash
# pip install gpu/integration/python into a fresh virtual environment and use
# strata_gpu from there: the plugin and its ledger where CMake found the CUDA
# toolkit (the caller says which), the no-device answers where not.
# scikit-build-core comes from PyPI (or pip's cache) into the new environment;
# the package itself is always built from this source tree, into a scratch
# build folder. Exits 77 (CTest's skip) with one line saying why when venv or
# pip cannot work here (no ensurepip, no network and nothing cached).
# Usage: pip_install_test.sh SOURCE_DIR EXPECT_LIBRARY(0|1)
set -euo pipefail
source_dir=$1 expect_library=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

skip() {
  echo "strata: pip install test skipped: $*"
  exit 77
}

python3 -m venv "$work/venv" >"$work/venv.log" 2>&1 || skip "python3 -m venv fails ($(tail -n 1 "$work/venv.log"))"
python=$work/venv/bin/python
"$python" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" \
  >"$work/backend.log" 2>&1 || skip "scikit-build-core cannot be installed ($(tail -n 1 "$work/backend.log"))"

# The backend is already in the fresh environment: no second isolated one.
start=$(date +%s)
if ! "$python" -m pip install --disable-pip-version-check --no-build-isolation \
    --config-settings=build-dir="$work/build" --config-settings=build.verbose=false \
    "$source_dir/gpu/integration/python" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  echo "strata: pip install gpu/integration/python failed" >&2
  exit 1
fi
echo "strata: pip install gpu/integration/python took $(($(date +%s) - start)) s"
grep -E "^-- strata: (GPU|the strata_gpu)|CUDA toolkit" "$work/install.log" || true

# From outside the source tree, so the module is the environment's.
cd "$work"
"$python" - "$expect_library" <<'PY'
import errno, json, os, sys, types
import strata_gpu

assert strata_gpu.__file__.startswith(sys.prefix), strata_gpu.__file__
expect_library = sys.argv[1] == "1"
assert strata_gpu.available() == expect_library, strata_gpu.library_path()

# A stand-in for CuPy: use_with_cupy hands it strata's allocator, or nothing.
chosen = []
cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(set_allocator=chosen.append))

if expect_library:
    assert os.path.dirname(strata_gpu.library_path()).startswith(sys.prefix)
    ledger = strata_gpu.ledger()
    assert {"heap", "totals", "devices", "resources"} <= set(ledger), ledger
    assert strata_gpu.ledger("html").startswith("<!DOCTYPE html>")
    try:
        strata_gpu.stats(64)  # no machine has 64 GPUs: ENODEV, as integration.h says
        raise SystemExit("stats(64) did not fail")
    except OSError as error:
        assert error.errno == errno.ENODEV, error
    strata_gpu.use_with_cupy(cupy)
    assert chosen == [strata_gpu.cupy_allocator], chosen
    print("strata_gpu from the wheel: library", strata_gpu.library_path())
else:
    for call in (strata_gpu.stats, strata_gpu.ledger, strata_gpu.empty_cache,
                 strata_gpu.use_with_pytorch, lambda: strata_gpu.use_with_cupy(cupy)):
        try:
            call()
            raise SystemExit("%s did not give the no-device answer" % call)
        except OSError as error:
            assert error.errno == errno.ENODEV and "without the CUDA toolkit" in str(error), error
    assert chosen == []
    print("strata_gpu from the wheel: no library, every call ENODEV")
PY
