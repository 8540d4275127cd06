# Sourced by the scripts here (bash).
# callgrind_total OUT [VALGRIND OPTION...] -- COMMAND...: run COMMAND under
# callgrind, its output to OUT, and print the instructions counted: the whole
# run, or only inside the functions a --toggle-collect option names.
callgrind_total() {
  local out=$1 options=()
  shift
  while [ "$1" != -- ]; do
    options+=("$1")
    shift
  done
  shift
  valgrind --tool=callgrind --callgrind-out-file="$out" "${options[@]}" "$@" >/dev/null 2>&1
  callgrind_annotate "$out" | grep -m1 "PROGRAM TOTALS" | awk '{gsub(",", "", $1); print $1}'
}
