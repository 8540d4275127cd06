#!/usr/bin/env bash
# Generate the inputs of the real-program workloads (run under the system allocator).
#
# Usage: make_inputs.sh DIR [WORKLOAD...]   (default: every workload)
#   git  DIR/git/history.git  a bare repository of 4,000+ commits, made by git fast-import
#   gcc  DIR/gcc/generated.c  a generated C file of some 5,000 lines
#   tiny DIR/tiny/tiny        tiny.c, a program that allocates a few KiB, compiled
# python, sqlite and sqlite_insert need no inputs. Inputs already present are kept; concurrent calls
# for the same DIR wait for each other.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
shift
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(python sqlite git gcc tiny)
unset LD_PRELOAD
generator_python=$(command -v /usr/bin/python3 || command -v python3)

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

# make_git DIR: the repository, built in a scratch folder then moved into place.
make_git() {
  local target=$1/git/history.git
  [ -d "$target" ] && return
  mkdir -p "$1/git"
  local scratch
  scratch=$(mktemp -d "$1/git/build.XXXXXX")
  git init --quiet --bare "$scratch/history.git"
  "$generator_python" "$here/make_git_history.py" 4000 |
    git -C "$scratch/history.git" fast-import --quiet --done
  git -C "$scratch/history.git" symbolic-ref HEAD refs/heads/main
  mv "$scratch/history.git" "$target"
  rmdir "$scratch"
}

# make_gcc DIR: the C file.
make_gcc() {
  local target=$1/gcc/generated.c
  [ -f "$target" ] && return
  mkdir -p "$1/gcc"
  "$generator_python" "$here/make_c_source.py" 200 >"$target.tmp"
  mv "$target.tmp" "$target"
}

# make_tiny DIR: the small C program, rebuilt when its source is newer.
make_tiny() {
  local target=$1/tiny/tiny
  [ -x "$target" ] && [ "$target" -nt "$here/tiny.c" ] && return
  mkdir -p "$1/tiny"
  cc -O2 "$here/tiny.c" -o "$target.tmp"
  mv "$target.tmp" "$target"
}

for workload in "${workloads[@]}"; do
  case "$workload" in
    git) make_git "$dir" ;;
    gcc) make_gcc "$dir" ;;
    tiny) make_tiny "$dir" ;;
    python | sqlite | sqlite_insert | redis | thread_mix | true | ls | python_start) ;;
    *) echo "make_inputs.sh: unknown workload '$workload'" >&2; exit 2 ;;
  esac
done
