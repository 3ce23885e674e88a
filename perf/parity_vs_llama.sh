#!/usr/bin/env bash
# Live decoder parity against llama.cpp (peer-cli, ../shared/peer): for each synthesized model,
# tokenization, teacher-forced logits over STEPS steps (llama.cpp's own greedy trajectory forced
# on both runtimes, full-vocabulary cosine per step, top-1 agreement where llama.cpp's top-2 margin
# > MARGIN) and free-running greedy text on the sharp models.
# llama.cpp runs the prompt one token per batch by default (PEER_BATCH="-b 1 -ub 1"): its batched
# prompt path has other float orders (4-row Q4_K GEMM and Q8_K quantizer, tinyBLAS) than its decode
# path, while ckjit's batched prefill reproduces llama.cpp's decode numerics. PEER_BATCH="" compares
# against llama.cpp's batched prompt instead (the gap is then llama.cpp's own batched-vs-serial gap).
# Each case also prints that envelope (llama.cpp batched vs -b 1 -ub 1 on the same forced ids): the
# float-order gap of llama.cpp itself on this machine, the yardstick of tests/unit/test_decoder_parity.cpp
# (which reads the recorded fixtures; this script records nothing and runs everything live).
# Usage: perf/parity_vs_llama.sh [BUILD_DIR]   (env: STEPS=128 MARGIN=0.05 PEER=path/to/peer-cli)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
CKJIT="$BUILD/tools/ckjit"
PEER="${PEER:-$(bash "$ROOT/tools/peer.sh")}"  # set PEER on AMX machines where its AMX build crashes (tools/peer.sh MODEL)
STEPS="${STEPS:-128}"
MARGIN="${MARGIN:-0.05}"
PEER_BATCH="${PEER_BATCH--b 1 -ub 1}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PROMPT="The quick brown fox jumps over the lazy dog. Once upon a time"
ids_of() { python3 -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))[sys.argv[2]])))" "$1" "$2"; }

# name | synth options | sharp (greedy text check)
CASES=(
  "tiny-s1|--preset tiny --seed 1 --sharpness 10|yes"
  "tiny-s2|--preset tiny --seed 2|no"
  "tiny-s3|--preset tiny --seed 3 --sharpness 10|yes"
  "headdim128-untied|--preset tiny --seed 4 --head-dim 128 --untied-output --sharpness 10|yes"
  "mixed-q5k-q80|--preset tiny --seed 5 --types mixed --sharpness 10|yes"
)
echo "machine: $("$CKJIT" info 2>/dev/null | head -1)"
echo "llama.cpp prompt batching: ${PEER_BATCH:-batched (default -b 2048 -ub 512)}; ckjit: batched prefill (default)"
for c in "${CASES[@]}"; do
  IFS='|' read -r name opts sharp <<<"$c"
  d="$WORK/$name"; mkdir -p "$d"
  # shellcheck disable=SC2086
  "$CKJIT" synth $opts --name m --out "$d" -q >/dev/null
  m="$(ls "$d"/m-*.gguf)"
  # shellcheck disable=SC2086
  "$PEER" complete -m "$m" -p "$PROMPT" -n "$STEPS" --ignore-eos $PEER_BATCH >"$d/greedy.json" 2>/dev/null
  ids_of "$d/greedy.json" tokens >"$d/forced.txt"
  # shellcheck disable=SC2086
  "$PEER" complete -m "$m" -p "$PROMPT" --force "$d/forced.txt" $PEER_BATCH --dump-logits "$d/peer.f32" >"$d/peer.json" 2>/dev/null
  "$PEER" complete -m "$m" -p "$PROMPT" --force "$d/forced.txt" --dump-logits "$d/peer_bat.f32" >/dev/null 2>&1
  "$PEER" complete -m "$m" -p "$PROMPT" --force "$d/forced.txt" -b 1 -ub 1 --dump-logits "$d/peer_tbt.f32" >/dev/null 2>&1
  "$CKJIT" run -m "$m" -p "$PROMPT" --force "$d/forced.txt" --dump-logits "$d/ck.f32" >/dev/null 2>"$d/ck.err"
  peer_prompt="$(ids_of "$d/peer.json" prompt_tokens)"
  ck_prompt="$("$CKJIT" run -m "$m" -p "$PROMPT" -n 1 -v 2>&1 >/dev/null | sed -n 's/^prompt ids: //p')"
  tok="same"; [ "$peer_prompt" = "$ck_prompt" ] || tok="DIFFERENT ($peer_prompt | $ck_prompt)"
  echo "== $name ($opts): tokenization $tok"
  echo "   teacher-forced: $("$CKJIT" logits "$d/ck.f32" --compare "$d/peer.f32" --margin "$MARGIN")"
  echo "   llama.cpp envelope (batched vs -b 1 -ub 1): $("$CKJIT" logits "$d/peer_bat.f32" --compare "$d/peer_tbt.f32" --margin "$MARGIN")"
  if [ "$sharp" = yes ]; then
    "$CKJIT" run -m "$m" -p "$PROMPT" -n "$STEPS" --ignore-eos -v 2>"$d/ck_greedy.err" >/dev/null
    ck_gen="$(sed -n 's/^generated ids: //p' "$d/ck_greedy.err")"
    peer_gen="$(ids_of "$d/greedy.json" tokens)"
    python3 - "$ck_gen" "$peer_gen" <<'PY'
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
n = 0
while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
print(f"   greedy: first {n} of {len(b)} tokens identical")
PY
  fi
done
