#!/usr/bin/env bash
# Two ckjit binaries (e.g. before and after a change) on the same model and workload, alternated in
# fresh processes: a PP-token prompt prefilled from an empty cache, then TG greedy decode steps
# (--ignore-eos). Prints each round, the medians and their ratio (B / A), peak RSS (GNU time), and
# the load average before and after; the machine is named by `ckjit info`.
#   perf/ab_run.sh CKJIT_A CKJIT_B MODEL.gguf [THREADS=2] [PP=512] [TG=64] [ROUNDS=3]
set -euo pipefail
A="$1"; B="$2"; MODEL="$3"; T="${4:-2}"; PP="${5:-512}"; TG="${6:-64}"; ROUNDS="${7:-3}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
python3 "$(dirname "$0")/prompt_words.py" "$PP" >"$WORK/prompt.txt"
echo "machine: $("$B" info 2>/dev/null | head -1)"
echo "A: $A"; echo "B: $B"; echo "model: $MODEL, threads $T, prompt $PP words, decode $TG"
echo "load average at start: $(cat /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    bin="${!side}"
    /usr/bin/time -f "maxrss_kib %M" "$bin" run -m "$MODEL" -f "$WORK/prompt.txt" -n "$TG" --ignore-eos -t "$T" \
      -c $((PP + TG + 64)) 2>"$WORK/$side.$r" >/dev/null
  done
done
echo "load average at end: $(cat /proc/loadavg)"
python3 - "$WORK" "$ROUNDS" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
res = {"A": [], "B": []}
for r in range(1, rounds + 1):
    for side in "AB":
        t = open(f"{work}/{side}.{r}").read()
        pf = float(re.search(r"prefill \d+ tok [\d.]+ ms \(([\d.]+) tok/s\)", t).group(1))
        dc = float(re.search(r"decode \d+ tok [\d.]+ ms \(([\d.]+) tok/s\)", t).group(1))
        rss = int(re.search(r"maxrss_kib (\d+)", t).group(1)) / 1024
        res[side].append((pf, dc, rss))
    a, b = res["A"][-1], res["B"][-1]
    print(f"round {r}: A prefill {a[0]:7.1f} decode {a[1]:6.2f} tok/s rss {a[2]:6.0f} MiB | "
          f"B prefill {b[0]:7.1f} decode {b[1]:6.2f} tok/s rss {b[2]:6.0f} MiB")
med = lambda s, i: statistics.median(x[i] for x in res[s])
print(f"median A: prefill {med('A',0):.1f} tok/s, decode {med('A',1):.2f} tok/s, peak RSS {med('A',2):.0f} MiB")
print(f"median B: prefill {med('B',0):.1f} tok/s, decode {med('B',1):.2f} tok/s, peak RSS {med('B',2):.0f} MiB")
print(f"B / A: prefill {med('B',0)/med('A',0):.3f}x, decode {med('B',1)/med('A',1):.3f}x, peak RSS {med('B',2)/med('A',2):.3f}x")
PY
