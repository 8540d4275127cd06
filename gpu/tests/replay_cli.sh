#!/bin/sh
# strata-replay --gpu end to end: a synthetic PyTorch memory snapshot
# converted to a device trace, replayed under three configurations (the
# defaults run out where max_split_size_mb:64 does not), the plot and JSON
# written, and bad input refused with one line and exit code 2.
# usage: replay_cli.sh STRATA_REPLAY PYTHON FIXTURE_SCRIPT CONVERTER
set -u
replay=$1 python=$2 fixture=$3 converter=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { grep -qF -- "$1" "$2" || { cat "$2"; fail "'$1' missing from $2"; }; }

"$python" "$fixture" "$dir/snap.pickle" || fail "fixture"
"$python" "$converter" "$dir/snap.pickle" "$dir/snap.trace" > "$dir/convert.out" || fail "convert"
expect "13 actions (skipped: 1 snapshot)" "$dir/convert.out"

"$replay" --gpu "$dir/snap.trace" --device-memory 128MiB --config '' \
  --config max_split_size_mb:64 --config roundup_power2_divisions:4 \
  --plot "$dir/plot.html" --json "$dir/out.json" > "$dir/replay.out" || fail "replay"
expect "11 records of device 0 (4 allocations, 2 frees, 1 out of memory), 2 streams" "$dir/replay.out"
expect "recorded: peak reserved 102.0 MiB (106954752 bytes), 2 cudaMallocs" "$dir/replay.out"
expect "| (defaults) | 102.0 MiB | 100.0 MiB | 2.0% | 2 | at record 10 (80.0 MiB) |" "$dir/replay.out"
expect "| max_split_size_mb:64 | 112.0 MiB | 110.0 MiB | 1.8% | 4 | no |" "$dir/replay.out"
expect "recommended: max_split_size_mb:64 (the lowest peak reserved, 112.0 MiB" "$dir/replay.out"
expect "<svg" "$dir/plot.html"
expect "<td>max_split_size_mb:64</td>" "$dir/plot.html"
expect '"recommended": 1' "$dir/out.json"

"$replay" --gpu "$dir/snap.trace" --device 1 --plot "$dir/plot.svg" > "$dir/device1.out" || fail "device 1"
expect "2 records of device 1 (1 allocations, 0 frees, 0 out of memory)" "$dir/device1.out"
head -c 4 "$dir/plot.svg" | grep -q "<svg" || fail "plot.svg is not an SVG"

# Bad input: one line, exit code 2.
refused() {
  want=$1; shift
  "$@" > "$dir/bad.out" 2>&1
  code=$?
  [ "$code" -eq 2 ] || { cat "$dir/bad.out"; fail "exit $code, not 2: $*"; }
  expect "$want" "$dir/bad.out"
}
printf 'cos\nsystem\n(S"true"\ntR.' > "$dir/evil.pickle"
refused "the pickle names a class (os.system)" "$python" "$converter" "$dir/evil.pickle" "$dir/x"
"$python" -c 'import pickle,sys; pickle.dump({"segments": []}, open(sys.argv[1], "wb"))' "$dir/plain.pickle"
refused "no device_traces list" "$python" "$converter" "$dir/plain.pickle" "$dir/x"
refused "unknown key \"bogus\"" "$replay" --gpu "$dir/snap.trace" --config bogus:1
refused "--device-memory takes a size such as 80GiB, not '12XB'" \
  "$replay" --gpu "$dir/snap.trace" --device-memory 12XB
refused "holds no actions of device 5" "$replay" --gpu "$dir/snap.trace" --device 5
printf 'STRTRC01\001\000\000\000\000\000\000\000' > "$dir/host.trace"
refused "a host trace, not a device trace" "$replay" --gpu "$dir/host.trace"
echo "replay_cli: ok"
