#!/usr/bin/env bash
# Run one real-program workload and print its results; the output is deterministic, so
# two runs under different allocators must print the same bytes. The allocator is
# whatever LD_PRELOAD says (inherited by every process the workload starts).
#
# Usage: workload.sh WORKLOAD INPUTS-DIR
#   python  /usr/bin/python3 (or $OVERRIDE_TEST_PYTHON) running alloc_heavy.py, PYTHONMALLOC=malloc
#   sqlite  sqlite3 building and querying a 150,000-row database (sqlite_workload.sql)
#   sqlite_insert  sqlite3 inserting 200,000 rows into a table with two indexes in one
#           transaction, 64 MiB page cache (sqlite_insert.sql)
#   git     log, diff, blame, archive, repack and fsck on a 4,000-commit repository
#   gcc     gcc -O2 -g compiling and linking a generated C file, then running it
#   redis   redis-server on a free loopback port, loaded by redis-benchmark (bounded:
#           100,000 requests per test); with $WORKLOAD_SAMPLE set, writes to that file
#           "SECONDS KIB": the benchmark's wall time and the server's peak RSS (VmHWM)
# Missing inputs are generated first (make_inputs.sh), without LD_PRELOAD.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
workload=$1
inputs=$2
LD_PRELOAD= "$here/make_inputs.sh" "$inputs" "$workload"
# Scratch files go to memory when possible, so disk speed does not blur the timings.
scratch_parent=/dev/shm
[ -d "$scratch_parent" ] && [ -w "$scratch_parent" ] || scratch_parent=${TMPDIR:-/tmp}
scratch=$(mktemp -d -p "$scratch_parent")
trap 'rm -rf "$scratch"' EXIT

# fingerprint: a short digest of standard input.
fingerprint() { sha256sum | cut -c1-16; }

# PYTHONMALLOC=malloc: every object from malloc, not from Python's own small-object pools.
run_python() {
  PYTHONMALLOC=malloc "${OVERRIDE_TEST_PYTHON:-/usr/bin/python3}" "$here/alloc_heavy.py"
}

run_sqlite() {
  sqlite3 "$scratch/workload.db" <"$here/sqlite_workload.sql"
  local bad
  bad=$(sqlite3 "$scratch/workload.db" 'PRAGMA integrity_check;')
  echo "final integrity: $bad"
}

run_sqlite_insert() {
  sqlite3 "$scratch/insert.db" <"$here/sqlite_insert.sql"
}

# git_step LABEL ARGS...: run one git command on the clone, print LABEL and a digest of
# its output; a failing command fails the workload.
git_step() {
  local label=$1
  shift
  git -C "$scratch/repo.git" -c core.pager=cat -c pack.threads=2 "$@" >"$scratch/step.out"
  echo "$label: $(fingerprint <"$scratch/step.out")"
}

run_git() {
  git clone --quiet --bare --no-local "$inputs/git/history.git" "$scratch/repo.git"
  git_step "rev-list" rev-list --count main
  echo "commits: $(cat "$scratch/step.out")"
  git_step "log --stat" log --stat --format='%H %an %s' main
  git_step "log -p (500 commits)" log -p -n 500 main
  git_step "diff main~3000 main" diff main~3000 main
  git_step "ls-tree" ls-tree -r main
  local path
  path=$(awk '{print $4}' "$scratch/step.out" | sed -n 150p)
  git_step "blame $path" blame --porcelain main -- "$path"
  git_step "archive" archive --format=tar main
  git_step "repack" repack -a -d -f -q
  # Pack sizes vary with threaded delta search; the object counts do not.
  git -C "$scratch/repo.git" count-objects -v | grep -E '^(count|in-pack):'
  git_step "fsck" fsck --strict --no-progress --no-dangling
}

run_gcc() {
  # The compile runs in the inputs folder so paths recorded in debug info are the same
  # every run; only the outputs go to the scratch folder.
  (cd "$inputs/gcc" && gcc -O2 -g -frandom-seed=strata -Wall -c generated.c -o "$scratch/generated.o")
  echo "object: $(fingerprint <"$scratch/generated.o")"
  gcc "$scratch/generated.o" -o "$scratch/generated"
  echo "program prints: $("$scratch/generated")"
}

# The redis server while it runs (pid, port), for the exit trap and the clients.
redis_server=""
redis_port=""

# start_redis_server: starts redis-server (under the allocator being measured) on a
# loopback port that nothing answers on, below the ephemeral range so that no client
# connection holds it either; another port is tried if the bind fails all the same.
start_redis_server() {
  local low attempt
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for attempt in 1 2 3 4 5; do
    redis_port=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && continue
    redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
      --daemonize no --dir "$scratch" --logfile "$scratch/redis.log" &
    redis_server=$!
    until [ "$(LD_PRELOAD='' redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]; do
      if ! kill -0 "$redis_server" 2>/dev/null; then
        wait "$redis_server" || true
        redis_server=""
        break
      fi
      sleep 0.1
    done
    [ -z "$redis_server" ] || return 0
  done
  echo "workload.sh: redis-server did not start ($attempt tries):" >&2
  tail -n 5 "$scratch/redis.log" >&2
  return 1
}

# The clients run without the allocator, since they are not what is measured. Their
# throughput figures vary from run to run, so only the names of the tests run are
# printed.
run_redis() {
  local start seconds peak_kib
  # A workload that fails half-way must not leave the server behind.
  trap '[ -z "$redis_server" ] || kill "$redis_server" 2>/dev/null; rm -rf "$scratch"' EXIT
  start_redis_server
  start=$(date +%s.%N)
  LD_PRELOAD='' redis-benchmark -h 127.0.0.1 -p "$redis_port" -n 100000 -r 100000 -d 256 \
    -c 20 -P 16 -t set,get,lpush,lpop,sadd,hset,zadd,lrange_100 --csv >"$scratch/benchmark.csv"
  seconds=$(awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { print end - start }')
  # Read before the shutdown: the status file goes with the process.
  peak_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$redis_server/status")
  LD_PRELOAD='' redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  wait "$redis_server"
  redis_server=""
  echo "tests run: $(tail -n +2 "$scratch/benchmark.csv" | cut -d, -f1 | tr -d '"' | paste -sd ';')"
  [ -z "${WORKLOAD_SAMPLE:-}" ] || echo "$seconds $peak_kib" >"$WORKLOAD_SAMPLE"
}

case "$workload" in
  python | sqlite | sqlite_insert | git | gcc | redis) "run_$workload" ;;
  *) echo "workload.sh: unknown workload '$workload'" >&2; exit 2 ;;
esac
