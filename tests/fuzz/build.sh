#!/usr/bin/env bash
# Builds the GGUF reader fuzzer with clang++ (libFuzzer + ASan + UBSan) into build-fuzz/, writes a
# seed corpus, and optionally runs it:  bash tests/fuzz/build.sh [SECONDS]
# The main build uses g++, which has no libFuzzer; this script does not need CMake.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/build-fuzz"
CXX="${CXX_FUZZ:-clang++}"
command -v "$CXX" >/dev/null || { echo "build.sh: $CXX not found (apt-get install clang)" >&2; exit 1; }
mkdir -p "$OUT/corpus"
SOURCES=("$ROOT"/runtime/gguf/*.cpp "$ROOT/runtime/tensor_type.cpp")
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$ROOT")
"$CXX" "${FLAGS[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  "$ROOT/tests/fuzz/fuzz_gguf_reader.cpp" "${SOURCES[@]}" -o "$OUT/fuzz_gguf_reader"
"$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/make_seeds.cpp" "${SOURCES[@]}" -o "$OUT/make_seeds"
"$OUT/make_seeds" "$OUT/corpus"
echo "built $OUT/fuzz_gguf_reader (seed corpus in $OUT/corpus)"
if [ "${1:-}" != "" ]; then
  cd "$OUT"
  ./fuzz_gguf_reader -max_total_time="$1" -max_len=4096 -rss_limit_mb=2048 corpus
fi
