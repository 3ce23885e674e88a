#!/usr/bin/env bash
# Starts `ckjit serve` on a synthesized tiny pair with an API key and runs the official `openai`
# npm client against it (openai_client.cjs). Exit 77 (ctest: skipped) when node or the package is
# missing (tools/setup.sh installs both).
#   bash tests/serve/openai_client.sh CKJIT_BINARY IMAGE.png OPENAI_PACKAGE_DIR
set -euo pipefail
CKJIT="$1"
IMAGE="$2"
PKG="$3"
command -v node >/dev/null || { echo "openai_client: node is not installed (tools/setup.sh)"; exit 77; }
[ -f "$PKG/package.json" ] || { echo "openai_client: no openai package at $PKG (tools/setup.sh)"; exit 77; }
tmp="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
"$CKJIT" synth --preset tiny --out "$tmp/m" >/dev/null 2>&1
model="$(ls "$tmp"/m/*-Q4_K_M.gguf)"
mmproj="$(ls "$tmp"/m/mmproj-*.gguf)"
key="test-key-$RANDOM"
"$CKJIT" serve -m "$model" --mmproj "$mmproj" --port 0 -t 2 -c 1024 --image-max-tokens 64 --api-key "$key" 2>"$tmp/err" &
pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/err")"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err" >&2; echo "openai_client: the server exited early" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/err" >&2; echo "openai_client: no listening line" >&2; exit 1; }
node "$(dirname "$0")/openai_client.cjs" "$PKG" "http://127.0.0.1:$port/v1" "$key" "$IMAGE"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || { tail -20 "$tmp/err" >&2; echo "openai_client: the server ended with status $status" >&2; exit 1; }
