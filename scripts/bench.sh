#!/usr/bin/env bash
# Build strata in release mode and run strata-bench; the report lands in report/.
# Extra arguments go to strata-bench (see strata-bench --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
exec build/release/bench/strata-bench/strata-bench --out report "$@"
