#!/usr/bin/env bash
# Build what the report needs in release mode (strata-bench, whose workers are
# itself, and the malloc override it preloads; not the test suites) and run
# strata-bench; the report lands in report/. Extra arguments go to strata-bench
# (see strata-bench --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target strata-bench strata-malloc
exec build/release/bench/strata-bench/strata-bench --out report "$@"
