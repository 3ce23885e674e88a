#!/usr/bin/env bash
# The page pipeline side by side with llama.cpp (peer-cli image, b10256 with mtmd) on the same
# files, image and prompt: image encode (preprocess + vision tower), the image rows' prefill, the
# text rows' prefill, and decode, alternated in fresh processes (ckjit, peer, ckjit, peer, ...),
# medians and ratios (peer / ckjit: > 1 means ckjit is faster), load average before and after,
# the machine named by `ckjit info`.
#   perf/vision_vs_llama.sh MODEL.gguf MMPROJ.gguf IMAGE [THREADS=2] [ROUNDS=3] [TG=16]
# (env: CKJIT=path/to/ckjit, PEER=path/to/peer-cli)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$1"; MMPROJ="$2"; IMAGE="$3"; T="${4:-2}"; ROUNDS="${5:-3}"; TG="${6:-16}"
CKJIT="${CKJIT:-$ROOT/build/tools/ckjit}"
PEER="${PEER:-$(bash "$ROOT/tools/peer.sh" "$MODEL")}"  # tools/peer.sh: one that runs MODEL here
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
PROMPT="Read the text on this page."
echo "machine: $("$CKJIT" info 2>/dev/null | head -1)"
echo "model: $MODEL | mmproj: $MMPROJ | image: $IMAGE | threads $T | decode $TG | rounds $ROUNDS"
echo "load average at start: $(cat /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  "$CKJIT" run -m "$MODEL" --mmproj "$MMPROJ" --image "$IMAGE" -p "$PROMPT" -n "$TG" --ignore-eos -t "$T" -c 8192 \
    2>"$WORK/ck.$r" >/dev/null
  "$PEER" image -m "$MODEL" --mmproj "$MMPROJ" --image "$IMAGE" -p "$PROMPT" -n "$TG" --ignore-eos -t "$T" -c 8192 \
    >"$WORK/peer.$r" 2>/dev/null
  echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "load average at end: $(cat /proc/loadavg)"
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ck, pe = [], []
for r in range(1, rounds + 1):
    t = open(f"{work}/ck.{r}").read()
    ph = re.search(r"image encode ([\d.]+) ms .*?\((\d+) images?, (\d+) rows\) \| prefill [\d.]+ ms \(image rows ([\d.]+) ms, text rows ([\d.]+) ms\) \| decode ([\d.]+) ms", t)
    dn = int(re.search(r"decode (\d+) tok", t).group(1))
    ck.append({"encode": float(ph.group(1)), "rows": int(ph.group(3)), "img_prefill": float(ph.group(4)),
               "text_prefill": float(ph.group(5)), "decode_tps": dn / float(ph.group(6)) * 1e3 if dn else 0.0})
    j = json.loads(open(f"{work}/peer.{r}").read())
    tm = j["timings"]
    pe.append({"encode": tm["image_encode_ms"], "rows": j["n_img_tokens"], "img_prefill": tm["image_decode_ms"],
               "text_prefill": tm["text_decode_ms"], "decode_tps": tm["gen_tps"]})
    print(f"round {r}: ckjit encode {ck[-1]['encode']:9.1f} ms, image-row prefill {ck[-1]['img_prefill']:9.1f} ms | "
          f"llama.cpp encode {pe[-1]['encode']:9.1f} ms, image-row prefill {pe[-1]['img_prefill']:9.1f} ms")
assert all(c["rows"] == p["rows"] for c, p in zip(ck, pe)), "the two runtimes made different numbers of image rows"
med = lambda xs, k: statistics.median(x[k] for x in xs)
print(f"image rows: {ck[0]['rows']}")
for k, what, unit in (("encode", "image encode", "ms"), ("img_prefill", "image-row prefill", "ms"),
                      ("text_prefill", "text-row prefill", "ms"), ("decode_tps", "decode", "tok/s")):
    c, p = med(ck, k), med(pe, k)
    ratio = (c / p) if unit == "tok/s" else (p / c)
    print(f"median {what:18s}: ckjit {c:10.1f} {unit:5s} llama.cpp {p:10.1f} {unit:5s} ckjit speed-up {ratio:5.2f}x")
PY
