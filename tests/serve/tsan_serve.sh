#!/usr/bin/env bash
# `ckjit serve --parallel 2` under ThreadSanitizer: concurrent text, image and streamed requests and a
# client that drops its stream, on one model shared by two sessions; fails on any TSan report, on a
# failed request, or when SIGTERM does not end the server with status 0.
#   bash tests/serve/tsan_serve.sh CKJIT_BINARY IMAGE.png
set -euo pipefail
CKJIT="$1"
IMAGE="$2"
source "$(dirname "$0")/tiny_server.sh"
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 suppressions=$(dirname "$0")/tsan.supp"
# TSan makes the load slow: up to a minute.
start_tiny_server "$CKJIT" tsan_serve 600 --parallel 2 -t 1 -c 1024 --image-max-tokens 64
url="http://127.0.0.1:$port/v1/chat/completions"
b64="$(base64 -w0 "$IMAGE")"
text='{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":6,"seed":1}'
image='{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,'"$b64"'"}},{"type":"text","text":"Read."}]}],"max_tokens":4}'
stream='{"messages":[{"role":"user","content":"Count"}],"max_tokens":8,"stream":true}'
post() { curl -s -S --max-time 240 -H 'Content-Type: application/json' -o "$tmp/$1.out" -w '%{http_code}' -d @- "$url" >"$tmp/$1.code"; }
clients=()
echo "$text" | post t1 & clients+=($!)
echo "$image" | post i1 & clients+=($!)
echo "$stream" | post s1 & clients+=($!)
echo "$image" | post i2 & clients+=($!)  # a cache hit or a second encode, racing the first
# A client that goes away mid-stream (curl stops after its first bytes).
echo "$stream" | curl -s --max-time 240 -H 'Content-Type: application/json' -d @- -N "$url" | head -c 1 >/dev/null || true
for c in "${clients[@]}"; do wait "$c" || true; done
for r in t1 i1 s1 i2; do
  code="$(cat "$tmp/$r.code" 2>/dev/null || echo none)"
  [ "$code" = 200 ] || { echo "tsan_serve: request $r answered $code: $(head -c 300 "$tmp/$r.out" 2>/dev/null)" >&2; exit 1; }
done
grep -q '"choices"' "$tmp/t1.out" && grep -q 'data: \[DONE\]' "$tmp/s1.out" || { echo "tsan_serve: unexpected bodies" >&2; exit 1; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
if grep -q "WARNING: ThreadSanitizer" "$tmp/err"; then
  grep -A30 "WARNING: ThreadSanitizer" "$tmp/err" | head -80 >&2
  echo "tsan_serve: ThreadSanitizer reported a race" >&2
  exit 1
fi
[ "$status" = 0 ] || { tail -20 "$tmp/err" >&2; echo "tsan_serve: the server ended with status $status" >&2; exit 1; }
echo "tsan_serve: 4 concurrent requests and a dropped stream on 2 sessions, no ThreadSanitizer report, clean exit"
