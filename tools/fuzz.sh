#!/usr/bin/env bash
# A long fuzzing campaign: every libFuzzer target for SECONDS each (default 1800), growing the
# corpora in build-fuzz/<target>/corpus from run to run. CI runs the same targets for 45 s each.
#   bash tools/fuzz.sh [SECONDS]                   each target for SECONDS
#   FUZZ_RUNS=1000000 bash tools/fuzz.sh 7200      each target until 10^6 executions (at most 2 h each)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
bash "$ROOT/tools/setup.sh"
exec bash "$ROOT/tests/fuzz/build.sh" "${1:-1800}"
