#!/usr/bin/env bash
# Run one test program under LD_PRELOAD of the allocator being checked.
#
# Usage: run_preloaded.sh PRELOAD PROGRAM [ARGS...]
#   PRELOAD  the allocator library to preload, or "glibc" for none.
#            $OVERRIDE_PRELOAD, when set, replaces it (e.g. to check mimalloc).
# Exits 77 (CTest skip) when the library has not been built. The program sees
# OVERRIDE_TEST_STRICT=1 when the allocator promises glibc-identical edge cases
# (glibc itself and strata); other allocators are held to POSIX only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/preload.sh"

preload=$(preload_resolve "$1")
shift
preload_env=$(preload_environment "$preload")

# shellcheck disable=SC2086
exec timeout --kill-after=5 "${OVERRIDE_TEST_TIMEOUT:-120}" env $preload_env "$@"
