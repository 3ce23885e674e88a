#!/usr/bin/env bash
# llama.cpp's own envelope on a real-size file and where ckjit's float orders fall in it: on one
# teacher-forced trajectory (llama.cpp's batched greedy tokens), E = max |llama.cpp batched -
# llama.cpp one token per batch (-b 1 -ub 1)| and D = max |ckjit - llama.cpp batched|, both over
# the 16 top ids of each step, for ckjit's default and for each extra flag set given. A text
# prompt of PP words, and (with an mmproj) the page at --image-max-tokens ROWS. Slow (the
# one-token-per-batch prompt); never part of the tests.
#   perf/envelope.sh MODEL.gguf [MMPROJ.gguf IMAGE] [-- "--attention llama" ...]
# env: PP (512), STEPS (32), ROWS (256), T (2), CKJIT, PEER
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$1"; shift
MMPROJ=""; IMAGE=""
if [[ $# -ge 2 && "$1" != "--" ]]; then MMPROJ="$1"; IMAGE="$2"; shift 2; fi
[[ "${1:-}" == "--" ]] && shift
VARIANTS=("" "$@")
PP="${PP:-512}"; STEPS="${STEPS:-32}"; ROWS="${ROWS:-256}"; T="${T:-2}"
CKJIT="${CKJIT:-$ROOT/build/tools/ckjit}"
PEER="${PEER:-$(bash "$ROOT/tools/peer.sh" "$MODEL")}"  # tools/peer.sh: one that runs MODEL here
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
python3 "$ROOT/perf/prompt_words.py" "$PP" >"$WORK/prompt.txt"
echo "machine: $("$CKJIT" info | head -1)"
echo "model: $MODEL${MMPROJ:+ | mmproj: $MMPROJ | image: $IMAGE at --image-max-tokens $ROWS} | $STEPS forced steps | threads $T"

run_case() {  # run_case NAME PEER_MODE ARGS...
  local name="$1" mode="$2"; shift 2
  local d="$WORK/$name"; mkdir -p "$d"
  "$PEER" "$mode" -m "$MODEL" "$@" -n "$STEPS" --ignore-eos -t "$T" -c 4096 >"$d/greedy.json" 2>/dev/null
  python3 -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$d/greedy.json" >"$d/forced.txt"
  "$PEER" "$mode" -m "$MODEL" "$@" --force "$d/forced.txt" -t "$T" -c 4096 --dump-logits "$d/bat.f32" >/dev/null 2>&1
  "$PEER" "$mode" -m "$MODEL" "$@" --force "$d/forced.txt" -t "$T" -c 4096 -b 1 -ub 1 --dump-logits "$d/tbt.f32" >/dev/null 2>&1
  local i=0
  for v in "${VARIANTS[@]}"; do
    # shellcheck disable=SC2086
    "$CKJIT" run -m "$MODEL" "$@" --force "$d/forced.txt" -t "$T" -c 4096 --dump-logits "$d/ck$i.f32" $v >/dev/null 2>&1
    i=$((i + 1))
  done
  python3 - "$d" "$name" "${VARIANTS[@]}" <<'PY'
import array, heapq, os, sys
d, name, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
V = 151936
def load(p):
    a = array.array("f"); a.frombytes(open(p, "rb").read()); return a
bat, tbt = load(f"{d}/bat.f32"), load(f"{d}/tbt.f32")
steps = len(bat) // V
tops = [heapq.nlargest(16, range(s * V, (s + 1) * V), key=tbt.__getitem__) for s in range(steps)]
dist = lambda x, y: max(abs(x[i] - y[i]) for t in tops for i in t)
E = dist(bat, tbt)
print(f"{name}: llama.cpp envelope E (batched vs -b 1 -ub 1) = {E:.4f}")
for i, v in enumerate(variants):
    D = dist(load(f"{d}/ck{i}.f32"), bat)
    print(f"{name}: ckjit {v or '(default)'}: D = {D:.4f} = {D / E if E else float('inf'):.2f} x E"
          f" ({'within' if D <= 4 * E + 1e-5 else 'OUTSIDE'} the rule D <= 4 E + 1e-5)")
PY
}
run_case "text pp$PP" complete -f "$WORK/prompt.txt"
if [[ -n "$MMPROJ" ]]; then
  run_case "page ($ROWS rows)" image --mmproj "$MMPROJ" --image "$IMAGE" --image-max-tokens "$ROWS" -p "Read the text on this page."
fi
