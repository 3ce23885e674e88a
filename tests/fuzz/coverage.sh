#!/usr/bin/env bash
# Line coverage of a fuzz target's corpus (clang source-based coverage): which parts of the checked
# code the inputs reach. Builds TARGET without sanitizers but with -fprofile-instr-generate into
# build-fuzz/coverage/, runs it once over build-fuzz/TARGET/corpus (bash tests/fuzz/build.sh
# first) and prints llvm-cov's per-file report for the files named (default: the target's sources).
#   bash tests/fuzz/coverage.sh model_load [graph/hparams.cpp vision/vision_hparams.cpp ...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/build-fuzz"
CXX="${CXX_FUZZ:-clang++}"
t="${1:?usage: coverage.sh TARGET [FILE...]}"; shift
source "$ROOT/tests/fuzz/targets.sh"
[ -n "${SOURCES[$t]:-}" ] || { echo "coverage.sh: unknown target $t (one of: ${TARGETS[*]})" >&2; exit 2; }
[ -d "$OUT/$t/corpus" ] || { echo "coverage.sh: no corpus in $OUT/$t (run bash tests/fuzz/build.sh first)" >&2; exit 1; }
COV="$OUT/coverage"
mkdir -p "$COV"
COVFLAGS=(-fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping)
srcs="${SOURCES[$t]}"
if [[ "$srcs" == *stb_decoder.o* ]]; then  # stb compiled with coverage too, not the ASan object
  "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping -c "$ROOT/runtime/image/stb_decoder.cpp" -o "$COV/stb_decoder.o"
  srcs="${srcs//$OUT\/stb_decoder.o/$COV/stb_decoder.o}"
fi
# shellcheck disable=SC2086
"$CXX" "${FLAGS[@]}" "${COVFLAGS[@]}" "$ROOT/tests/fuzz/fuzz_$t.cpp" $srcs -o "$COV/fuzz_$t" ${LIBS[$t]:-}
rm -f "$COV/$t".profraw
LLVM_PROFILE_FILE="$COV/$t.profraw" "$COV/fuzz_$t" -runs=0 -max_len=1000000 "$OUT/$t/corpus" 2>"$COV/$t.log"
llvm-profdata merge -sparse "$COV/$t.profraw" -o "$COV/$t.profdata"
files=()
if [ $# -gt 0 ]; then for f in "$@"; do files+=("$ROOT/$f"); done; else for f in $srcs; do [[ "$f" == *.cpp ]] && files+=("$f"); done; fi
echo "coverage of $t: $(ls "$OUT/$t/corpus" | wc -l) corpus inputs"
llvm-cov report "$COV/fuzz_$t" -instr-profile="$COV/$t.profdata" "${files[@]}" | sed "s|$ROOT/||"
