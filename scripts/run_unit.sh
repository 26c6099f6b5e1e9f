#!/usr/bin/env bash
# Runs cmocka unit-test binaries (as `make unit` does) and prints one summary
# line over all of them, skips counted:
#   unit (release): 312 passed, 2 skipped, 0 failed in 31 binaries
# then each skipped test with the reason it printed ("skipped: ..."), then
# each binary's wall time, slowest first.
# UNIT_JOBS=N runs N binaries at a time (default 1: one after another, each
# log printed as it ends); the logs are printed in the given order either way.
# Exits 1 when a test failed or a binary exited non-zero (a crash, a group
# setup error), else 0. Usage: scripts/run_unit.sh LABEL BINARY...
set -u
label="$1"
shift
jobs="${UNIT_JOBS:-1}"
passed=0 skipped=0 failed=0 bad_bins="" skip_list="" times=""
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# Runs one binary: DIR/NAME.log (its output), .rc, .ms (wall time).
run_one() {
  local t="$1" out="$2/$(basename "$1")" start
  start=$(date +%s%N)
  "$t" >"$out.log" 2>&1
  echo $? >"$out.rc"
  echo $((($(date +%s%N) - start) / 1000000)) >"$out.ms"
}

# Counts one finished binary's results into the totals.
collect() {
  local t="$1" name out p s f rc ms
  name="$(basename "$t")" out="$dir/$(basename "$t")"
  echo "== $t"
  cat "$out.log"
  rc=$(cat "$out.rc") ms=$(cat "$out.ms")
  times="$times$ms $name
"
  # cmocka's summary: "[  PASSED  ] N test(s).", "[  SKIPPED ] N test(s),
  # listed below:", "[  FAILED  ] N test(s), listed below:".
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s).*/\1/p' "$out.log" | awk '{s+=$1} END {print s+0}')
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' "$out.log" | awk '{s+=$1} END {print s+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$out.log" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)) skipped=$((skipped + s)) failed=$((failed + f))
  if [ "$rc" -ne 0 ] || [ "$p$s$f" = "000" ]; then
    bad_bins="$bad_bins $name(exit $rc)"
  fi
  if [ "$s" -gt 0 ]; then
    # "skipped: why" (test_require.h) is printed just before "[  SKIPPED ] name".
    skip_list="$skip_list$(awk -v bin="$name" '
      /^skipped: / { why = substr($0, 10) }
      /^\[  SKIPPED \] / && $0 !~ /test\(s\)/ && !seen[$4]++ {
        print "  " bin ": " $4 ": " (why == "" ? "(no reason printed)" : why)
        why = "" }' "$out.log")
"
  fi
}

if [ "$jobs" -le 1 ]; then
  for t in "$@"; do
    run_one "$t" "$dir"
    collect "$t"
  done
else
  export -f run_one
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$1" "$2"' _ {} "$dir"
  for t in "$@"; do collect "$t"; done
fi

echo "unit ($label): $passed passed, $skipped skipped, $failed failed in $# binaries"
if [ -n "$skip_list" ]; then
  echo "skipped tests:"
  printf '%s' "$skip_list"
fi
echo "time per binary ($label), slowest first:"
printf '%s' "$times" | sort -rn | awk '{ printf "  %7.1f s  %s\n", $1 / 1000, $2 }'
if [ "$failed" -gt 0 ] || [ -n "$bad_bins" ]; then
  [ -n "$bad_bins" ] && echo "failed binaries:$bad_bins"
  exit 1
fi
exit 0
