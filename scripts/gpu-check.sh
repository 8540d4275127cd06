#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step bodies run in a child bash, through run_step
# The device check of strata's GPU half: one prepared run for a machine with an
# NVIDIA GPU, its driver, the CUDA toolkit, PyTorch and CuPy, and no network.
# It keeps within 8 minutes on one H100 with 16 cores (STRATA_GPU_CHECK_BUDGET_S).
#
# Usage: scripts/gpu-check.sh OUTDIR
#
# Steps, each under its own time limit, each run whatever became of the ones
# before; a step that needs a GPU is marked "skipped: no GPU" where none answers:
#   environment          GPU, driver, CUDA, PyTorch, CuPy and tool versions
#   torch-extension      strata's PyTorch extension, JIT-built into
#                        build/gpu-check/torch-extensions (no GPU needed);
#                        these two run in the background beside the build
#   configure, build     build/gpu-check (Release, tests, bench, the real CUDA
#                        runtime for the GPU tests): gpu/, strata-bench, strata-malloc
#   ctest                the GPU suite's CUDA instances and integration tests,
#                        one at a time (they share the GPU's memory); JUnit XML kept
#   memcheck, racecheck  compute-sanitizer over the caching, pool and device
#                        test programs' CUDA instances (gpu/check/sanitize.sh)
#   bench                strata-bench --only 'xsigma/gpu-*,unified/managed-*,
#                        gpu/fragmentation'
#                        --allocators strata (on the simulated device without a GPU)
#   torch-alloc-bench    allocate+free through PyTorch: its caching allocator, its
#                        cudaMallocAsync backend and strata's, a process each
#   torch-e2e            a small transformer trained under PyTorch's allocator and
#                        under strata's, a process each, losses compared
#   torch-graph, torch-record-stream, torch-oom   strata under torch.cuda.graph,
#                        Tensor.record_stream and out of memory
#   cupy, cupy-per-thread   a CuPy workload through strata, then on per-thread
#                        default streams from two threads
# The pieces are in gpu/check/. Writes OUTDIR/gpu-check.md and
# OUTDIR/gpu-check.json (gpu/check/report.py), each step's log in OUTDIR/logs,
# its result files in OUTDIR/results, strata-bench's JSON in OUTDIR/bench.
#
# Environment: STRATA_GPU_CHECK_BUDGET_S  the run's budget in seconds (default
#              450); a step is cut short at it, or skipped once it is spent
#              PYTHON  the Python with PyTorch and CuPy (default python3)
#
# Exit status: 0  every step ran, with a GPU, and passed
#              1  a step failed or timed out, or (with a GPU) was skipped
#              2  bad usage
#              3  no GPU: every step that could run passed, the rest were skipped
set -euo pipefail

# The header above, as the usage text.
usage() {
  sed -n '3,/^set -euo/p' "$0" | sed '$d'
}

case $# in
  1) ;;
  *) usage >&2; exit 2 ;;
esac
case $1 in
  -h | --help) usage; exit 0 ;;
  -*) usage >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
build=$repo/build/gpu-check
logs=$out/logs
results=$out/results
steps=$out/steps.tsv
python=${PYTHON:-python3}
jobs=$(nproc)
budget=${STRATA_GPU_CHECK_BUDGET_S:-450}
# Seconds kept back from the budget for the report.
report_reserve=15
started=$SECONDS
rm -rf "$logs" "$results" "$out/bench"
mkdir -p "$logs" "$results" "$build"
: >"$steps"

# The CUDA toolkit's tools (compute-sanitizer, nvcc) where it is not on PATH.
if [ -d /usr/local/cuda/bin ]; then
  PATH=$PATH:/usr/local/cuda/bin
fi
export PATH repo build results out python jobs
export PYTHONPATH=$repo/gpu/integration/python${PYTHONPATH:+:$PYTHONPATH}
export STRATA_GPU_ALLOC_LIBRARY=$build/gpu/integration/libstrata-gpu-alloc.so
export TORCH_EXTENSIONS_DIR=$build/torch-extensions

# Whether an NVIDIA GPU answers: nvidia-smi lists at least one.
gpu_present() {
  command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

# Microseconds since the epoch, for step durations finer than a second.
now_us() {
  echo "${EPOCHREALTIME/./}"
}

# One line of steps.tsv: position, name, status, seconds, note (its tabs made spaces).
record() {
  local note=${5//$'\t'/ }
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$note" >>"$steps"
  echo "gpu-check: $2: $3${note:+ ($note)} [$4 s]"
}

# The reason a skipped Python piece gave (its last "skipped: ..." line).
skip_reason() {
  grep -o 'skipped: .*' "$1" | tail -n 1 | cut -c10- || true
}

# A log's last non-empty line, shortened, to say why a step failed.
last_line() {
  grep -v '^[[:space:]]*$' "$1" | tail -n 1 | cut -c1-160 || true
}

# Run step NAME (position ORDER) as the function BODY under a limit of LIMIT
# seconds, cut to what the budget has left; skip it without a GPU when NEEDS
# is "gpu", or once the budget is spent. Records the outcome; never fails.
run_step() {
  local order=$1 name=$2 limit=$3 needs=$4 body=$5
  local log=$logs/$name.log
  if [ "$needs" = gpu ] && [ "$gpu" = no ]; then
    record "$order" "$name" skipped 0 "no GPU"
    return 0
  fi
  local left=$((budget - (SECONDS - started) - report_reserve))
  if [ "$left" -lt 10 ]; then
    record "$order" "$name" skipped 0 "out of time: the ${budget} s budget is spent"
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  local start rc=0
  start=$(now_us)
  timeout --kill-after=10 "$limit" bash -c "set -euo pipefail; $body" >"$log" 2>&1 || rc=$?
  local seconds
  seconds=$(awk -v us="$(($(now_us) - start))" 'BEGIN { printf "%.1f", us / 1e6 }')
  case $rc in
    0) record "$order" "$name" passed "$seconds" "" ;;
    77) record "$order" "$name" skipped "$seconds" "$(skip_reason "$log")" ;;
    124 | 137) record "$order" "$name" "timed out" "$seconds" "limit ${limit} s" ;;
    *) record "$order" "$name" failed "$seconds" "exit $rc: $(last_line "$log")" ;;
  esac
}

# ---- the steps' bodies (run by run_step in a child bash, hence exported)

# One Python piece of gpu/check, its command line echoed into the step's log.
piece() {
  echo "+ $python gpu/check/$*"
  "$python" "$repo/gpu/check/$1" "${@:2}"
}

# The worse of two exit statuses: a failure over a skip (77) over a pass.
worse() {
  if [ "$1" -ne 0 ] && [ "$1" -ne 77 ]; then
    echo "$1"
  elif [ "$2" -ne 0 ]; then
    echo "$2"
  else
    echo "$1"
  fi
}

step_environment() {
  piece environment.py --out "$results/environment.json"
}

step_torch_extension() {
  piece build_torch_extension.py --out "$results/torch-extension.json"
}

step_configure() {
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_TESTS=ON \
    -DSTRATA_BUILD_BENCH=ON -DSTRATA_GPU_TEST_CUDA=real
}

# Everything under gpu/ (its tests and libstrata-gpu-alloc.so), strata-bench and
# the malloc it preloads; -k 0 builds whatever does build despite a failure.
step_build() {
  ninja -C "$build" -k 0 -j "$jobs" gpu/all strata-bench strata-malloc
}

step_ctest() {
  ctest --test-dir "$build/gpu" -R 'cuda|^gpu_' -j 1 --timeout 60 --output-on-failure \
    --output-junit "$results/ctest-junit.xml"
}

step_memcheck() {
  "$repo/gpu/check/sanitize.sh" memcheck "$build/gpu/tests" "$results/memcheck.tsv" 60
}

step_racecheck() {
  "$repo/gpu/check/sanitize.sh" racecheck "$build/gpu/tests" "$results/racecheck.tsv" 60
}

step_bench() {
  "$build/bench/strata-bench/strata-bench" --only 'xsigma/gpu-*,unified/managed-*,gpu/fragmentation' \
    --allocators strata --out "$out/bench" --no-render
}

step_torch_alloc_bench() {
  local outcome=0 rc allocator
  for allocator in native native-async strata; do
    rc=0
    piece torch_alloc_bench.py --allocator "$allocator" \
      --out "$results/torch-alloc-bench-$allocator.json" || rc=$?
    outcome=$(worse "$outcome" "$rc")
  done
  return "$outcome"
}

step_torch_e2e() {
  local outcome=0 rc allocator
  for allocator in native strata; do
    rc=0
    piece torch_e2e.py run --allocator "$allocator" --out "$results/torch-e2e-$allocator.json" ||
      rc=$?
    outcome=$(worse "$outcome" "$rc")
  done
  [ "$outcome" -eq 0 ] || return "$outcome"
  piece torch_e2e.py compare "$results/torch-e2e-native.json" "$results/torch-e2e-strata.json" \
    --out "$results/torch-e2e.json"
}

step_torch_graph() {
  piece torch_graph.py --out "$results/torch-graph.json"
}

step_torch_record_stream() {
  piece torch_record_stream.py --out "$results/torch-record-stream.json"
}

step_torch_oom() {
  piece torch_oom.py --out "$results/torch-oom.json"
}

step_cupy() {
  piece cupy_workload.py --out "$results/cupy.json" --rounds 200
}

step_cupy_per_thread() {
  CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 piece cupy_workload.py \
    --out "$results/cupy-per-thread.json" --rounds 100 --threads 2
}

export -f piece worse step_environment step_torch_extension step_configure step_build \
  step_ctest step_memcheck step_racecheck step_bench step_torch_alloc_bench step_torch_e2e \
  step_torch_graph step_torch_record_stream step_torch_oom step_cupy step_cupy_per_thread

# ---- the run

# 0, 1 or 3 as the header says, from the steps' outcomes.
exit_status() {
  if cut -f3 "$steps" | grep -qvE '^(passed|skipped)$'; then
    echo 1
  elif [ "$gpu" = no ]; then
    echo 3
  elif cut -f3 "$steps" | grep -q '^skipped$'; then
    echo 1
  else
    echo 0
  fi
}

# The two report files, or, should the report itself fail, plain ones that say so.
write_report() {
  if "$python" "$repo/gpu/check/report.py" "$out" --gpu "$gpu" --exit-status "$1" \
    --budget "$budget" --wall-seconds "$((SECONDS - started))" >"$logs/report.log" 2>&1; then
    return 0
  fi
  {
    echo "# strata GPU check: the report could not be written"
    echo
    echo "See logs/report.log. The steps (position, name, status, seconds, note):"
    echo
    sed 's/^/    /' "$steps"
  } >"$out/gpu-check.md"
  printf '{"result": "report failed", "exit_status": 1, "steps_file": "steps.tsv"}\n' \
    >"$out/gpu-check.json"
  return 1
}

gpu=no
if gpu_present; then
  gpu=yes
fi
echo "gpu-check: GPU: $gpu; budget ${budget} s; output in $out"

# The environment and the extension need neither the build nor a GPU: they run
# beside the configure and build, and are waited for before the PyTorch steps.
run_step 1 environment 60 - step_environment &
environment_probe=$!
run_step 2 torch-extension 240 - step_torch_extension &
extension_build=$!
run_step 3 configure 60 - step_configure
run_step 4 build 240 - step_build
run_step 5 ctest 150 - step_ctest
run_step 6 memcheck 120 gpu step_memcheck
run_step 7 racecheck 120 gpu step_racecheck
run_step 8 bench 150 - step_bench
wait "$environment_probe" "$extension_build"
run_step 9 torch-alloc-bench 90 gpu step_torch_alloc_bench
run_step 10 torch-e2e 150 gpu step_torch_e2e
run_step 11 torch-graph 60 gpu step_torch_graph
run_step 12 torch-record-stream 60 gpu step_torch_record_stream
run_step 13 torch-oom 60 gpu step_torch_oom
run_step 14 cupy 60 gpu step_cupy
run_step 15 cupy-per-thread 60 gpu step_cupy_per_thread

status=$(exit_status)
write_report "$status" || status=1
echo "gpu-check: $((SECONDS - started)) s; exit status $status; report: $out/gpu-check.md"
exit "$status"
