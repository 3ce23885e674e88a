#!/usr/bin/env bash
# What `ckjit run --profile` and `--report DIR` cost the run: the same prompt plain, with --profile
# and with --report, alternated in fresh processes; the run's time is prefill + decode (ms) from
# the timing line (the ceiling probe of --report runs after it and is printed apart).
#   perf/report_overhead.sh CKJIT MODEL.gguf [ROUNDS=5] [PP=128] [TG=32]
set -euo pipefail
BIN="$1"; MODEL="$2"; ROUNDS="${3:-5}"; PP="${4:-128}"; TG="${5:-32}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
python3 "$(dirname "$0")/prompt_words.py" "$PP" >"$WORK/prompt.txt"
echo "machine: $("$BIN" info 2>/dev/null | head -1)"
echo "model: $MODEL, prompt $PP words, decode $TG, $ROUNDS rounds"
# One discarded run first: the model file into the page cache.
"$BIN" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos >/dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  "$BIN" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos 2>"$WORK/plain.$r" >"$WORK/plain.out.$r"
  "$BIN" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos --profile 2>"$WORK/profile.$r" >/dev/null
  "$BIN" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos --report "$WORK/rep" 2>"$WORK/report.$r" >"$WORK/report.out.$r"
  cmp -s "$WORK/plain.out.$r" "$WORK/report.out.$r" || echo "round $r: the text differs with --report"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def run_ms(path):
    t = open(path).read()
    pf = float(re.search(r"prefill \d+ tok ([\d.]+) ms", t).group(1))
    dc = float(re.search(r"decode \d+ tok ([\d.]+) ms", t).group(1))
    return pf + dc
res = {k: [run_ms(f"{work}/{k}.{r}") for r in range(1, rounds + 1)] for k in ("plain", "profile", "report")}
for k, v in res.items():
    print(f"{k:8s} prefill+decode ms: " + " ".join(f"{x:.0f}" for x in v) + f"  median {statistics.median(v):.0f}")
base = statistics.median(res["plain"])
for k in ("profile", "report"):
    # On a shared machine other tenants only ever add time: the best runs are the cleanest ratio.
    print(f"{k} / plain: medians {statistics.median(res[k]) / base:.4f}, best runs {min(res[k]) / min(res['plain']):.4f}")
ph = json.load(open(f"{work}/rep/phases.json"))
print(f"ceiling probe after the run (--report only): {ph['peaks']['probe_ms']:.0f} ms")
PY
