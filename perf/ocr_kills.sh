#!/usr/bin/env bash
# `ckjit ocr` killed with SIGKILL at many seeded random instants, each followed by a resume that must
# give every page and page file exactly once with the unkilled run's text: the ctest case "ckjit ocr:
# killed with SIGKILL at seeded random instants ..." (8 kills in CI) with more kills and a seed.
#   perf/ocr_kills.sh [--kills 100] [--seed 47]
# Prints the machine, the instants (seconds into a run, records already in the journal) and doctest's
# verdict. Exit status: the test's.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
KILLS=100 SEED=47
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) KILLS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    *) echo "usage: $0 [--kills 100] [--seed 47]" >&2; exit 2 ;;
  esac
done
[ -x "$BUILD/tests/ckjit_tests" ] || { echo "ocr_kills: $BUILD/tests/ckjit_tests is not built (bash tools/dev.sh check)" >&2; exit 1; }
echo "machine: $("$BUILD/tools/ckjit" info 2>/dev/null | head -n 1)"
echo "kills: $KILLS, seed $SEED; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
log="$(mktemp)"; trap 'rm -f "$log"' EXIT
status=0
CKJIT_OCR_KILLS="$KILLS" CKJIT_OCR_KILL_SEED="$SEED" "$BUILD/tests/ckjit_tests" \
  -tc='ckjit ocr: killed with SIGKILL at seeded random instants*' -s >"$log" 2>&1 || status=$?
grep -E 'kills \(seed|ERROR|CHECK|test cases|assertions' "$log" || tail -40 "$log"
echo "ocr_kills: $((SECONDS - start)) s, exit $status"
exit "$status"
