# Shared by the override drivers: which allocator to preload and how.
# Sourced, not run.

# preload_resolve REQUESTED: print the library to preload ("glibc" for none);
# exit 77 with a SKIP line when it does not exist.
preload_resolve() {
  local requested=${OVERRIDE_PRELOAD:-$1}
  if [ "$requested" = glibc ] || [ -z "$requested" ]; then
    echo glibc
    return
  fi
  if [ ! -f "$requested" ]; then
    echo "SKIP: $(basename "$requested") not built ($requested does not exist)" >&2
    exit 77
  fi
  readlink -f "$requested"
}

# preload_environment LIBRARY: the env(1) assignments that run a program under it.
preload_environment() {
  local library=$1 strict=0
  case "$(basename "$library")" in
    glibc | libstrata-malloc*) strict=1 ;;
  esac
  if [ "$library" = glibc ]; then
    echo "OVERRIDE_TEST_STRICT=$strict"
  else
    echo "OVERRIDE_TEST_STRICT=$strict LD_PRELOAD=$library"
  fi
}
