#!/usr/bin/env bash
# Prefill and decode speed of `ckjit run` next to llama.cpp's on the same GGUF, thread count and
# workload: a prompt of PP tokens prefilled from an empty cache, then TG greedy decode steps
# (--ignore-eos), i.e. decode after PP tokens of context. llama.cpp runs through peer-cli complete
# (../shared/peer). DRAM bandwidth on a shared VM drifts by 20-40% within minutes, so the two
# alternate for ROUNDS rounds and the medians are compared.
#   perf/speed_vs_llama.sh MODEL.gguf [THREADS=2] [PP=512] [TG=64] [ROUNDS=3]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$1"; T="${2:-2}"; PP="${3:-512}"; TG="${4:-64}"; ROUNDS="${5:-3}"
CKJIT="${CKJIT:-$ROOT/build/tools/ckjit}"
PEER="${PEER:-$(bash "$ROOT/tools/peer.sh" "$MODEL")}"  # tools/peer.sh: one that runs MODEL here
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
# A prompt of exactly PP tokens: random ids rendered to text would re-tokenize differently, so
# repeat a short sentence and cut the token ids with ckjit itself.
python3 "$ROOT/perf/prompt_words.py" "$PP" >"$WORK/prompt.txt"
echo "machine: $("$CKJIT" info 2>/dev/null | head -1)"
echo "model: $MODEL, threads $T"
echo "load average at start: $(cat /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  "$CKJIT" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos -t "$T" -c $((PP + TG + 64)) 2>"$WORK/ck.err" >/dev/null
  grep '^timing:' "$WORK/ck.err" >"$WORK/ck.$r"
  "$PEER" complete -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos -t "$T" -c $((PP + TG + 64)) 2>/dev/null >"$WORK/peer.$r"
done
echo "load average at end: $(cat /proc/loadavg)"
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ck, ll = [], []
for r in range(1, rounds + 1):
    line = open(f"{work}/ck.{r}").read()
    pf = float(re.search(r"prefill \d+ tok [\d.]+ ms \(([\d.]+) tok/s\)", line).group(1))
    dc = float(re.search(r"decode \d+ tok [\d.]+ ms \(([\d.]+) tok/s\)", line).group(1))
    t = json.load(open(f"{work}/peer.{r}"))["timings"]
    ck.append((pf, dc)); ll.append((t["prompt_tps"], t["gen_tps"]))
    print(f"round {r}: ckjit prefill {pf:7.1f} tok/s decode {dc:6.2f} tok/s | llama.cpp prefill {t['prompt_tps']:7.1f} tok/s decode {t['gen_tps']:6.2f} tok/s")
med = lambda v, i: statistics.median(x[i] for x in v)
print(f"median: ckjit prefill {med(ck,0):.1f} tok/s, decode {med(ck,1):.2f} tok/s; llama.cpp prefill {med(ll,0):.1f} tok/s, decode {med(ll,1):.2f} tok/s")
print(f"ckjit / llama.cpp: prefill {med(ck,0)/med(ll,0):.2f}x, decode {med(ck,1)/med(ll,1):.2f}x (medians; per round: prefill "
      + ", ".join(f"{a[0]/b[0]:.2f}" for a, b in zip(ck, ll)) + "; decode " + ", ".join(f"{a[1]/b[1]:.2f}" for a, b in zip(ck, ll)) + ")")
PY
