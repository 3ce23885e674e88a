#!/usr/bin/env bash
# Builds ckjit's libFuzzer targets with clang++ (libFuzzer + ASan + UBSan) into build-fuzz/, writes
# their seed corpora, and optionally runs each for SECONDS:  bash tests/fuzz/build.sh [SECONDS]
# (`build.sh --run SECONDS` runs what an earlier call built, without building again.)
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
# stb_image (runtime/image/stb_decoder.cpp: Debian's header, compiled in for BMP, so the decoder is
# instrumented and capped as in ckjit) keeps ASan and UBSan's bounds,
# null and alignment checks, which caught its Huffman-table overflow when it still decoded JPEG. UB that only changes values or
# touches nothing there (a null pointer plus 0 and a 0-byte memcpy to it, signed overflow and shifts in its
# entropy decoder and IDCT) is not checked in stb's object alone: ckjit cannot patch stb, and such a
# report says nothing about memory safety. ckjit's own code is built with every UBSan check.
STB_UNCHECKED=(-fno-sanitize=pointer-overflow,nonnull-attribute,signed-integer-overflow,shift)
JOBS="${JOBS:-$(nproc)}"
# A small job pool: at most JOBS commands at once; `finish` waits for all and fails if any failed.
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT  # a stopped build leaves no compiler or fuzzer behind
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.1; done
  "$@" &
  pids+=($!)
}
finish() {
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  pids=()
  [ "$failed" = 0 ] || { echo "fuzz build: a step failed (above)" >&2; exit 1; }
}
build_all() {
  # Every source once (several targets share the GGUF, image and structured-output sources), then
  # one link per target.
  OBJ="$OUT/obj"
  mkdir -p "$OBJ"
  obj_of() { local rel="${1#"$ROOT"/}"; echo "$OBJ/${rel//\//_}.o"; }
  spawn "$CXX" "${FLAGS[@]}" "${FUZZ[@]/fuzzer,/fuzzer-no-link,}" "${STB_UNCHECKED[@]}" -c "$ROOT/runtime/image/stb_decoder.cpp" -o "$OUT/stb_decoder.o"
  declare -A compiled=()
  for t in "${TARGETS[@]}"; do
    for src in "$ROOT/tests/fuzz/fuzz_$t.cpp" ${SOURCES[$t]}; do
      [[ "$src" == *.cpp && -z "${compiled[$src]:-}" ]] || continue
      compiled[$src]=1
      spawn "$CXX" "${FLAGS[@]}" "${FUZZ[@]/fuzzer,/fuzzer-no-link,}" -c "$src" -o "$(obj_of "$src")"
    done
  done
  finish
  for t in "${TARGETS[@]}"; do
    mkdir -p "$OUT/$t/corpus"
    objs=("$(obj_of "$ROOT/tests/fuzz/fuzz_$t.cpp")")
    for src in ${SOURCES[$t]}; do
      if [[ "$src" == *.cpp ]]; then objs+=("$(obj_of "$src")"); else objs+=("$src"); fi
    done
    # shellcheck disable=SC2086
    spawn "$CXX" "${FLAGS[@]}" "${FUZZ[@]}" "${objs[@]}" -o "$OUT/fuzz_$t" ${LIBS[$t]:-}
  done
  # Seed writers (plain builds): small valid GGUF files; valid tiny text models and mmprojs.
  spawn "$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/make_seeds.cpp" "${GGUF[@]}" -o "$OUT/make_seeds"
  # shellcheck disable=SC2086
  spawn "$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/make_model_seeds.cpp" ${SOURCES[model_load]} "$ROOT"/runtime/synth/*.cpp "$ROOT"/runtime/tokenizer/*.cpp "$ROOT/runtime/json.cpp" -o "$OUT/make_model_seeds"
  finish
  # Seeds: small valid GGUF files, the test images (and BMPs of every bit depth), a few texts and id lists.
  # Every target's corpus folder, built or not (FUZZ_TARGETS may name a few): the seeding is the same.
  for t in "${ALL_TARGETS[@]}"; do mkdir -p "$OUT/$t/corpus"; done
  "$OUT/make_seeds" "$OUT/gguf_reader/corpus"
  # The image seeds include every hostile file found so far: libFuzzer runs each seed first, so they are
  # regression inputs under the instrumented decoder too.
  cp "$ROOT"/tests/fixtures/vision/images/* "$ROOT"/tests/fixtures/jpeg-variants/* "$ROOT"/tests/fixtures/hostile-images/* \
    "$ROOT"/tests/fixtures/decoder-variants/*.{png,gif,jpg} "$ROOT"/tests/fuzz/seeds/image/* "$OUT/image/corpus/"
  cp "$ROOT"/tests/fuzz/seeds/tokenizer/* "$OUT/tokenizer/corpus/"
  cp "$ROOT"/tests/fuzz/seeds/token_ids/* "$OUT/token_ids/corpus/"
  cp "$ROOT"/tests/fuzz/seeds/chat_request/* "$OUT/chat_request/corpus/"
  cp "$ROOT"/tests/fuzz/seeds/json_schema/* "$OUT/json_schema/corpus/"
  cp "$ROOT"/tests/fuzz/seeds/gbnf/* "$OUT/gbnf/corpus/"
  "$OUT/make_model_seeds" "$OUT/model_load/corpus"
  echo "built ${TARGETS[*]/#/$OUT/fuzz_} (seed corpora in $OUT/<target>/corpus)"
}
if [ "${1:-}" = "--run" ]; then
  shift
  for t in "${TARGETS[@]}"; do
    [ -x "$OUT/fuzz_$t" ] || { echo "build.sh --run: $OUT/fuzz_$t is not built (run build.sh first)" >&2; exit 1; }
  done
else
  build_all
fi
if [ "${1:-}" != "" ]; then
  declare -A MAXLEN=([gguf_reader]=4096 [image]=65536 [tokenizer]=2048 [token_ids]=256 [model_load]=400000 [chat_request]=16384 [json_schema]=4096 [gbnf]=4096)
  # JOBS targets at a time (each one process), every one for the same SECONDS.
  fuzz_one() {
    local t="$1"
    if ! (cd "$OUT/$t" && "$OUT/fuzz_$t" -max_total_time="$2" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -max_len="${MAXLEN[$t]}" -rss_limit_mb=2048 -print_final_stats=1 corpus 2>"$OUT/$t/log.txt"); then
      tail -40 "$OUT/$t/log.txt" >&2
      echo "fuzz: $t found a crash (input in $OUT/$t)" >&2
      return 1
    fi
    echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$OUT/$t/log.txt" | awk '{print $2}') executions (at most $2 s), no crash"
  }
  for t in "${TARGETS[@]}"; do
    # FUZZ_RUNS=N: stop a target after N executions too (a recorded campaign's 10^6), SECONDS still the cap.
    spawn fuzz_one "$t" "$1"
  done
  finish
fi
