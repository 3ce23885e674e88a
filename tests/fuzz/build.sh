#!/usr/bin/env bash
# Builds ckjit's libFuzzer targets with clang++ (libFuzzer + ASan + UBSan) into build-fuzz/, writes
# their seed corpora, and optionally runs each for SECONDS:  bash tests/fuzz/build.sh [SECONDS]
# Targets: gguf_reader, image (decode + preprocess), tokenizer (+ chat template), token_ids (--force),
# model_load (text model and mmproj hyper-parameters and tensor checks), chat_request (ckjit serve's
# request bodies: JSON, content parts, base64 data: URIs, image headers, response_format schemas),
# json_schema (structured output's schema compiler and automaton, its accepted texts validated), gbnf
# (the GBNF grammar parser and compiler, the automaton walking a text).
# The main build uses g++, which has no libFuzzer; this script does not need CMake. A crash leaves
# its input in build-fuzz/<target>/crash-*; each one found becomes a regression test.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/build-fuzz"
CXX="${CXX_FUZZ:-clang++}"
command -v "$CXX" >/dev/null || { echo "build.sh: $CXX not found (apt-get install clang)" >&2; exit 1; }
# The targets, their sources, flags and libraries (shared with coverage.sh).
source "$ROOT/tests/fuzz/targets.sh"
mkdir -p "$OUT"
# stb_image (runtime/image/stb_decoder.cpp: Debian's header, compiled in, so the decoder is
# instrumented and capped as in ckjit) keeps ASan and UBSan's bounds,
# null and alignment checks, which caught its Huffman-table overflow. UB that only changes values or
# touches nothing there (a null pointer plus 0 and a 0-byte memcpy to it, signed overflow and shifts in its
# entropy decoder and IDCT) is not checked in stb's object alone: ckjit cannot patch stb, and such a
# report says nothing about memory safety. ckjit's own code is built with every UBSan check.
STB_UNCHECKED=(-fno-sanitize=pointer-overflow,nonnull-attribute,signed-integer-overflow,shift)
"$CXX" "${FLAGS[@]}" "${FUZZ[@]/fuzzer,/fuzzer-no-link,}" "${STB_UNCHECKED[@]}" -c "$ROOT/runtime/image/stb_decoder.cpp" -o "$OUT/stb_decoder.o"
for t in "${TARGETS[@]}"; do
  mkdir -p "$OUT/$t/corpus"
  # shellcheck disable=SC2086
  "$CXX" "${FLAGS[@]}" "${FUZZ[@]}" "$ROOT/tests/fuzz/fuzz_$t.cpp" ${SOURCES[$t]} -o "$OUT/fuzz_$t" ${LIBS[$t]:-}
done
# Seeds: small valid GGUF files, the test images (and BMPs of every bit depth), a few texts and id lists.
"$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/make_seeds.cpp" "${GGUF[@]}" -o "$OUT/make_seeds"
"$OUT/make_seeds" "$OUT/gguf_reader/corpus"
# The image seeds include every hostile file found so far: libFuzzer runs each seed first, so they are
# regression inputs under the instrumented decoder too.
cp "$ROOT"/tests/fixtures/vision/images/* "$ROOT"/tests/fixtures/jpeg-variants/* "$ROOT"/tests/fixtures/hostile-images/* \
  "$ROOT"/tests/fuzz/seeds/image/* "$OUT/image/corpus/"
cp "$ROOT"/tests/fuzz/seeds/tokenizer/* "$OUT/tokenizer/corpus/"
cp "$ROOT"/tests/fuzz/seeds/token_ids/* "$OUT/token_ids/corpus/"
cp "$ROOT"/tests/fuzz/seeds/chat_request/* "$OUT/chat_request/corpus/"
cp "$ROOT"/tests/fuzz/seeds/json_schema/* "$OUT/json_schema/corpus/"
cp "$ROOT"/tests/fuzz/seeds/gbnf/* "$OUT/gbnf/corpus/"
# shellcheck disable=SC2086
"$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/make_model_seeds.cpp" ${SOURCES[model_load]} "$ROOT"/runtime/synth/*.cpp "$ROOT"/runtime/tokenizer/*.cpp "$ROOT/runtime/json.cpp" -o "$OUT/make_model_seeds"
"$OUT/make_model_seeds" "$OUT/model_load/corpus"
echo "built ${TARGETS[*]/#/$OUT/fuzz_} (seed corpora in $OUT/<target>/corpus)"
if [ "${1:-}" != "" ]; then
  declare -A MAXLEN=([gguf_reader]=4096 [image]=65536 [tokenizer]=2048 [token_ids]=256 [model_load]=400000 [chat_request]=16384 [json_schema]=4096 [gbnf]=4096)
  for t in "${TARGETS[@]}"; do
    # FUZZ_RUNS=N: stop a target after N executions too (a recorded campaign's 10^6), SECONDS still the cap.
    (cd "$OUT/$t" && "$OUT/fuzz_$t" -max_total_time="$1" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -max_len="${MAXLEN[$t]}" -rss_limit_mb=2048 -print_final_stats=1 corpus 2>"$OUT/$t/log.txt") ||
      { tail -40 "$OUT/$t/log.txt" >&2; echo "fuzz: $t found a crash (input in $OUT/$t)" >&2; exit 1; }
    echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$OUT/$t/log.txt" | awk '{print $2}') executions (at most $1 s), no crash"
  done
fi
