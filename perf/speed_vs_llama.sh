#!/usr/bin/env bash
# Prefill and decode speed of `ckjit run` next to llama.cpp's (peer-cli bench, llama-bench
# semantics) on the same GGUF and thread count.
#   perf/speed_vs_llama.sh MODEL.gguf [THREADS=2] [PP=512] [TG=64]
# ckjit: a prompt of PP tokens prefilled in one batch from an empty cache, then TG greedy decode
# steps (--ignore-eos); the numbers are ckjit's own timing line. llama.cpp: peer-cli bench --pp PP
# --tg TG (pp from an empty cache; tg = single-token decodes from an empty cache), median of 3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$1"; T="${2:-2}"; PP="${3:-512}"; TG="${4:-64}"
CKJIT="${CKJIT:-$ROOT/build/tools/ckjit}"
PEER="${PEER:-$(bash "$ROOT/../shared/peer/build.sh" 2>/dev/null)}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
# A prompt of exactly PP tokens: random ids rendered to text would re-tokenize differently, so
# repeat a short sentence and cut the token ids with ckjit itself.
python3 - "$PP" >"$WORK/prompt.txt" <<'PY'
import sys
words = "the of and to in is was for on that with as by at from his her an were are which this be or has had".split()
n = int(sys.argv[1]); out = []
i = 0
while len(out) < n: out.append(words[(i * 7 + i // 3) % len(words)]); i += 1
print(" ".join(out))
PY
echo "machine: $("$CKJIT" info 2>/dev/null | head -1)"
echo "model: $MODEL, threads $T"
"$CKJIT" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos -t "$T" -c $((PP + TG + 64)) 2>"$WORK/ck.err" >/dev/null
echo "ckjit:     $(grep '^timing:' "$WORK/ck.err")"
"$PEER" bench -m "$MODEL" --pp "$PP" --tg "$TG" -t "$T" -r 3 2>/dev/null >"$WORK/peer.json"
python3 - "$WORK/peer.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("llama.cpp: " + json.dumps({k: v for k, v in j.items() if k not in ("model",)}))
PY
