#!/usr/bin/env bash
# A bounded load test of `ckjit serve` (not a timed test): starts a server on a model pair (the
# tiny synthesized one unless -m/--mmproj are given), sends N chat completions from C concurrent
# curl clients, and reports requests/s, generated tokens/s (max_tokens with ignore_eos) and p50 / p95 / p99
# latency with the machine (`ckjit info`) and
# the load average, which say how far the numbers can be trusted on a shared machine.
#   bash perf/serve_load.sh [-n 48] [-c 4] [--parallel 2] [--max-tokens 8] [--image PNG] [-m M --mmproj P]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CKJIT="${CKJIT:-$ROOT/build/tools/ckjit}"
N=48 C=4 PAR=2 MAXTOK=8 IMAGE="" MODEL="" MMPROJ="" THREADS=1
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N="$2"; shift 2 ;;
    -c) C="$2"; shift 2 ;;
    --parallel) PAR="$2"; shift 2 ;;
    --max-tokens) MAXTOK="$2"; shift 2 ;;
    --image) IMAGE="$2"; shift 2 ;;
    -t) THREADS="$2"; shift 2 ;;
    -m) MODEL="$2"; shift 2 ;;
    --mmproj) MMPROJ="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$CKJIT" ] || { echo "build ckjit first ($CKJIT)" >&2; exit 1; }
TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
if [ -z "$MODEL" ]; then
  "$CKJIT" synth -q --preset tiny --seed 3 --name t --out "$TMP" >/dev/null
  MODEL="$TMP/t-Q4_K_M.gguf" MMPROJ="$TMP/mmproj-t-f16.gguf"
fi
"$CKJIT" serve -m "$MODEL" ${MMPROJ:+--mmproj "$MMPROJ"} --port 0 --parallel "$PAR" -t "$THREADS" --no-profile \
  --max-tokens-limit 4096 >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 600); do  # at most 60 s to load
  PORT="$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/server.log")"
  [ -n "$PORT" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "the server did not start" >&2; exit 1; }
CONTENT='"Tell me something"'
if [ -n "$IMAGE" ]; then
  CONTENT="[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,$(base64 -w0 "$IMAGE")\"}},{\"type\":\"text\",\"text\":\"Describe\"}]"
fi
printf '{"messages":[{"role":"user","content":%s}],"max_tokens":%d,"ignore_eos":true,"seed":1}' "$CONTENT" "$MAXTOK" >"$TMP/body.json"
curl -sf -H 'Content-Type: application/json' --data-binary @"$TMP/body.json" "http://127.0.0.1:$PORT/v1/chat/completions" >/dev/null  # warm-up
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
seq 1 "$N" | xargs -P "$C" -I{} curl -s -o /dev/null --max-time 300 -w '%{http_code} %{time_total}\n' \
  -H 'Content-Type: application/json' --data-binary @"$TMP/body.json" "http://127.0.0.1:$PORT/v1/chat/completions" >"$TMP/times"
end=$(date +%s.%N)
ok=$(awk '$1 == 200' "$TMP/times" | wc -l)
echo "machine: $("$CKJIT" info | head -1)"
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server: --parallel $PAR -t $THREADS, $(basename "$MODEL")${IMAGE:+, image $(basename "$IMAGE")}, max_tokens $MAXTOK"
sort -n -k2 "$TMP/times" | awk -v n="$N" -v c="$C" -v ok="$ok" -v s="$start" -v e="$end" -v mt="$MAXTOK" '
  { t[NR] = $2 }
  END {
    p50 = t[int((NR - 1) * 0.50) + 1]; p95 = t[int((NR - 1) * 0.95) + 1]; p99 = t[int((NR - 1) * 0.99) + 1]
    printf "requests: %d (%d concurrent), %d ok\nthroughput: %.2f requests/s, %.1f generated tokens/s\nlatency: p50 %.3f s, p95 %.3f s, p99 %.3f s\n", n, c, ok, n / (e - s), ok * mt / (e - s), p50, p95, p99
  }' 
grep -E '^ckjit_(phase_seconds_total|completion_tokens_total|image_cache_hits_total)' <(curl -s "http://127.0.0.1:$PORT/metrics") || true
